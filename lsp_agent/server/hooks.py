"""How parts of the server take part in its life without touching pygls' feature table: a
participant is started after `initialized` and stopped at `shutdown`; a code-action source adds
actions to the one `textDocument/codeAction` handler (server/lifecycle.py calls them)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from lsprotocol import types

if TYPE_CHECKING:
    from lsp_agent.server.app import AgentServer

CodeActionSource = Callable[["AgentServer", types.CodeActionParams], Awaitable[list[types.CodeAction]]]


class Participant(Protocol):
    def started(self, ls: AgentServer) -> None: ...

    def stopping(self, ls: AgentServer) -> None: ...


@dataclass
class Lifecycle:
    participants: list[Participant] = field(default_factory=list)
    code_actions: list[CodeActionSource] = field(default_factory=list)
