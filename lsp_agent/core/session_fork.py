"""A session forked at a message: a new session holding a copy of the history before it.

The history is append-only, so taking the conversation back never edits it: the fork is a new
session (its parent named) whose messages are the prefix, word for word — a model server's prompt
cache still matches it. Message and part ids are new (ids are unique across the store); the content
is the same. A prefix never ends with a model's tool calls whose results were cut off: those calls
go too, so the fork is a history a model server accepts.
"""

from __future__ import annotations

from lsp_agent.core.storage import SessionStore
from lsp_agent.domain import ids
from lsp_agent.domain.history import Message, Role


class ForkRefused(LookupError):
    """`kind`: unknown_session, unknown_message."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind


def prefix_before(messages: list[Message], at: str | None) -> list[Message]:
    if at is None:
        kept = list(messages)
    else:
        index = next((n for n, m in enumerate(messages) if m.id == at), None)
        if index is None:
            raise ForkRefused("unknown_message", f"message {at} is not in this session")
        kept = messages[:index]
    while kept and kept[-1].role is Role.ASSISTANT and kept[-1].tool_calls():
        kept.pop()
    return kept


def fork_session(store: SessionStore, source: str, at: str | None) -> str:
    """The new session's id: `source`'s history before message `at` (all of it when None)."""
    record = store.session(source)
    if record is None:
        raise ForkRefused("unknown_session", f"no session {source} in this workspace")
    prefix = prefix_before(store.messages(source), at)
    new_id = ids.session_id()
    title = f"{record.title} (fork)" if record.title else "fork"
    copies = [m.model_copy(update={"id": ids.message_id(),
                                   "parts": [p.model_copy(update={"id": ids.part_id()}) for p in m.parts]})
              for m in prefix]
    store.create_fork(new_id, record.workspace, record.model, title, source, copies)
    return new_id
