"""`agent/workspaceTrust`: show, grant or revoke the user's trust in the workspace's own config; a
grant or a revoke reloads the settings at once (the gated MCP servers exist only from then on)."""

from __future__ import annotations

from lsp_agent.app.trust_wire import trust_state
from lsp_agent.protocol.errors import INVALID_PARAMS, ProtocolError
from lsp_agent.protocol.trust_models import AGENT_WORKSPACE_TRUST, WorkspaceTrustParams, WorkspaceTrustState
from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.rpc import Routes
from lsp_agent.settings.config import inspect_workspace
from lsp_agent.settings.workspace_trust import TrustChanged, revoke, trust

routes = Routes()


@routes.rpc(AGENT_WORKSPACE_TRUST, WorkspaceTrustParams)
def agent_workspace_trust(ls: AgentServer, params: WorkspaceTrustParams) -> WorkspaceTrustState:
    root = ls.runtime().root
    if params.action == "show":
        return trust_state(ls.recheck_trust())
    if params.action == "trust":
        if params.hash is None:
            raise ProtocolError(INVALID_PARAMS, f"{AGENT_WORKSPACE_TRUST}: `trust` needs the `hash` the user was "
                                "shown", field="hash")
        try:
            trust(inspect_workspace(root), params.hash)
        except TrustChanged as exc:
            raise ProtocolError(INVALID_PARAMS, str(exc), kind="trust_changed") from None
    else:
        revoke(root)
    return trust_state(ls.reload_settings())
