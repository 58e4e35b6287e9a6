"""ACP session modes = our approval policy and sandbox mode, as named pairs (`session/set_mode`)."""

from __future__ import annotations

from dataclasses import dataclass

from acp.schema import SessionMode, SessionModeState

from lsp_agent.settings.config import Settings


@dataclass(frozen=True)
class Mode:
    id: str
    name: str
    description: str
    approval: str
    sandbox: str


MODES = (
    Mode("read-only", "Read only", "no edits: the edit tools refuse and commands run in a read-only sandbox; "
         "ask when a call steps outside it",
         "on-request", "read-only"),
    Mode("untrusted", "Ask before commands", "every command is approved first (workspace-write sandbox)",
         "untrusted", "workspace-write"),
    Mode("on-request", "Default", "sandboxed commands run; ask only when a call steps outside the sandbox",
         "on-request", "workspace-write"),
    Mode("on-failure", "Retry outside the sandbox", "as Default, and a command that failed in the sandbox may be "
         "re-run without it once approved", "on-failure", "workspace-write"),
    Mode("never", "Never ask", "never ask: what would need an approval is refused", "never", "workspace-write"),
    Mode("full-access", "Full access", "commands run WITHOUT a sandbox; ask as Default", "on-request",
         "danger-full-access"),
)
BY_ID = {m.id: m for m in MODES}


def current(settings: Settings) -> str:
    for mode in MODES:
        if mode.approval == settings.approval_policy and mode.sandbox == settings.sandbox_mode:
            return mode.id
    return f"{settings.approval_policy}+{settings.sandbox_mode}"  # configured outside the named pairs


def state(settings: Settings) -> SessionModeState:
    available = [SessionMode(id=m.id, name=m.name, description=m.description) for m in MODES]
    mode_id = current(settings)
    if mode_id not in BY_ID:
        available.append(SessionMode(id=mode_id, name=mode_id, description="from the settings files"))
    return SessionModeState(current_mode_id=mode_id, available_modes=available)


def apply(settings: Settings, mode_id: str) -> Settings:
    mode = BY_ID[mode_id]
    return settings.model_copy(update={"approval_policy": mode.approval, "sandbox_mode": mode.sandbox})
