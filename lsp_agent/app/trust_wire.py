"""Workspace trust as every front end shows it: the wire state of a workspace view and the one line
that names what is ignored and how each front end trusts it."""

from __future__ import annotations

from lsp_agent.protocol.trust_models import GatedSettingOut, WorkspaceTrustState
from lsp_agent.settings.workspace_trust import CONFIG_FILE, WorkspaceView

HOW_TO_TRUST = {
    "cli": "review and apply with `lsp-agent trust`",
    "editor": "review and apply with \"lsp-agent: Manage Workspace Trust\" (VS Code), :LspAgentTrust (Neovim) "
              "or `lsp-agent trust`",
    "acp": "review and apply with `lsp-agent trust`, or answer the agent's trust question",
}


def trust_state(view: WorkspaceView) -> WorkspaceTrustState:
    return WorkspaceTrustState(
        root=str(view.root), state=view.state, hash=view.hash, files=view.files,
        gated=[GatedSettingOut(setting=g.setting, file=CONFIG_FILE, effect=g.effect) for g in view.gated])
