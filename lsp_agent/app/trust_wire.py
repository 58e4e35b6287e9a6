"""Workspace trust as the wire shows it: the state of a workspace view (agent/workspaceTrust, the CLI's
--json, the ACP question)."""

from __future__ import annotations

from lsp_agent.protocol.trust_models import GatedSettingOut, WorkspaceTrustState
from lsp_agent.settings.workspace_trust import CONFIG_FILE, WorkspaceView


def trust_state(view: WorkspaceView) -> WorkspaceTrustState:
    return WorkspaceTrustState(
        root=str(view.root), state=view.state, hash=view.hash, files=view.files,
        gated=[GatedSettingOut(setting=g.setting, file=CONFIG_FILE, effect=g.effect) for g in view.gated])
