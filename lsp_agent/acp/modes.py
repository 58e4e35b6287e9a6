"""ACP session modes = our approval policy and sandbox mode, as named pairs (`session/set_mode`)."""

from __future__ import annotations

from acp.schema import SessionMode, SessionModeState

from lsp_agent.settings.config import Settings
from lsp_agent.settings.modes import ACP_MODES, by_id
from lsp_agent.settings.modes import apply as apply_mode
from lsp_agent.settings.modes import current as shared_current

MODES = ACP_MODES
BY_ID = by_id(MODES)


def current(settings: Settings) -> str:
    return shared_current(settings, MODES)


def state(settings: Settings) -> SessionModeState:
    available = [SessionMode(id=m.id, name=m.name, description=m.description) for m in MODES]
    mode_id = current(settings)
    if mode_id not in BY_ID:
        available.append(SessionMode(id=mode_id, name=mode_id, description="from the settings files"))
    return SessionModeState(current_mode_id=mode_id, available_modes=available)


def apply(settings: Settings, mode_id: str) -> Settings:
    return apply_mode(settings, BY_ID[mode_id])
