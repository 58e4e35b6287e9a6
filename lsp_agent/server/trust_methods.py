"""`agent/workspaceTrust`: show, grant or revoke the user's trust in the workspace's own config; a
grant or a revoke reloads the settings at once (the gated MCP servers exist only from then on).
`TrustWatch` notices the config changing while the editor is open (the file watcher skips
`.lsp-agent/`), so the editor can ask again before the next run would."""

from __future__ import annotations

import asyncio
import logging
import os

from lsp_agent.app.trust_wire import trust_state
from lsp_agent.protocol.errors import INVALID_PARAMS, ProtocolError
from lsp_agent.protocol.trust_models import AGENT_WORKSPACE_TRUST, WorkspaceTrustParams, WorkspaceTrustState
from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.rpc import Routes
from lsp_agent.settings.config import inspect_workspace
from lsp_agent.settings.workspace_trust import TRUST_FILES, TrustChanged, revoke, trust

log = logging.getLogger(__name__)
routes = Routes()

#: seconds between two looks at the trusted files' metadata (a stat each; the content is read only
#: when the metadata changed)
WATCH_INTERVAL_S = 1.0


def _signature(root: os.PathLike[str]) -> tuple[tuple[int, int, int, int] | None, ...]:
    found: list[tuple[int, int, int, int] | None] = []
    for rel in TRUST_FILES:
        try:
            info = os.stat(os.path.join(root, rel))  # never opens: a FIFO there cannot block this
            found.append((info.st_ino, info.st_size, info.st_mtime_ns, info.st_mode))
        except OSError:
            found.append(None)
    return tuple(found)


class TrustWatch:
    """A lifecycle participant: re-inspects the workspace's config when its metadata changes."""

    def __init__(self) -> None:
        self.task: asyncio.Task[None] | None = None

    def started(self, ls: AgentServer) -> None:
        if ls.rt is not None and self.task is None:
            self.task = asyncio.ensure_future(self._watch(ls))

    def stopping(self, ls: AgentServer) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None

    async def _watch(self, ls: AgentServer) -> None:
        root = ls.runtime().root
        seen = _signature(root)
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            now = await asyncio.to_thread(_signature, root)
            if now != seen:
                seen = now
                try:
                    ls.recheck_trust()
                except Exception:  # the watch goes on; the next change or run checks again
                    log.exception("re-checking the workspace's trust failed")


@routes.rpc(AGENT_WORKSPACE_TRUST, WorkspaceTrustParams)
def agent_workspace_trust(ls: AgentServer, params: WorkspaceTrustParams) -> WorkspaceTrustState:
    root = ls.runtime().root
    if params.action == "show":
        return trust_state(ls.recheck_trust())
    if params.action == "trust":
        if params.hash is None:
            raise ProtocolError(INVALID_PARAMS, f"{AGENT_WORKSPACE_TRUST}: `trust` needs the `hash` the user was "
                                "shown", field="hash")
        if ls.editor_distrusts:
            raise ProtocolError(INVALID_PARAMS, "the editor does not trust this folder (Restricted Mode): trust the "
                                "folder in the editor first; its own config is ignored until then",
                                kind="editor_distrusts")
        try:
            trust(inspect_workspace(root), params.hash)
        except TrustChanged as exc:
            raise ProtocolError(INVALID_PARAMS, str(exc), kind="trust_changed") from None
    else:
        revoke(root)
    return trust_state(ls.reload_settings())
