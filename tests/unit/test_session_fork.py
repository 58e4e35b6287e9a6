"""A conversation forked at a message: a new session with the prefix copied word for word, new ids,
the parent named; never ending in tool calls whose results were cut off."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_agent.core.session_fork import ForkRefused, fork_session
from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.store.db import Store
from lsp_agent.store.memory import MemoryStore


def history(store: MemoryStore) -> list[Message]:
    store.create_session("ses_a", "/ws", "m", title="work")
    messages = [
        Message(role=Role.USER, parts=[TextPart(text="do it")]),
        Message(role=Role.ASSISTANT, parts=[ToolCallPart(call_id="c1", name="read_file", arguments="{}")]),
        Message(role=Role.TOOL, parts=[ToolResultPart(call_id="c1", name="read_file", ok=True, output="x")]),
        Message(role=Role.ASSISTANT, parts=[TextPart(text="done")]),
    ]
    for message in messages:
        store.append_message("ses_a", message)
    return messages


def test_a_fork_copies_the_prefix_with_new_ids_and_names_its_parent() -> None:
    store = MemoryStore()
    original = history(store)
    fork = fork_session(store, "ses_a", original[3].id)
    copied = store.messages(fork)
    assert [m.model_dump(exclude={"id", "parts"}) for m in copied] == \
        [m.model_dump(exclude={"id", "parts"}) for m in original[:3]]
    assert [[p.model_dump(exclude={"id"}) for p in m.parts] for m in copied] == \
        [[p.model_dump(exclude={"id"}) for p in m.parts] for m in original[:3]]
    assert not {m.id for m in copied} & {m.id for m in original}
    record = store.session(fork)
    assert record is not None and record.parent_id == "ses_a" and record.title == "work (fork)"
    assert len(store.messages("ses_a")) == 4  # the original is untouched


def test_a_fork_never_ends_with_unanswered_tool_calls() -> None:
    store = MemoryStore()
    original = history(store)
    fork = fork_session(store, "ses_a", original[2].id)  # before the results of the call
    assert [m.role for m in store.messages(fork)] == [Role.USER]


def test_unknown_session_or_message_is_refused_and_nothing_is_created() -> None:
    store = MemoryStore()
    history(store)
    for session, at, kind in (("ses_nope", None, "unknown_session"), ("ses_a", "msg_nope", "unknown_message")):
        with pytest.raises(ForkRefused) as refused:
            fork_session(store, session, at)
        assert refused.value.kind == kind
    assert [s.id for s in store.sessions()] == ["ses_a"]


def test_a_fork_that_fails_half_way_leaves_no_session(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.db")
    try:
        store.create_session("ses_a", "/ws", "m")
        message = Message(role=Role.USER, parts=[TextPart(text="x")])
        with pytest.raises(Exception):  # noqa: B017 - the second copy's id collides: the store refuses it
            store.create_fork("ses_b", "/ws", "m", "fork", "ses_a", [message, message])
        assert store.session("ses_b") is None and store.messages("ses_b") == []
    finally:
        store.close()
