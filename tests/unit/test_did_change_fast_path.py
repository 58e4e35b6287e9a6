"""A didChange applied on the fast path leaves the text the general path leaves, and the fast path
takes only what the general path would read the same way.

The general path is what the server did before: the notification structured by pygls's converter
(lsprotocol's types and validators) and each change applied by the workspace. It is run here on
our LineWorkspace (what the server uses) and on pygls's own TextDocument.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import Workspace

from lsp_agent.server import transport
from lsp_agent.server.convert import make_converter
from lsp_agent.server.did_change_fast_path import DidChange, RangeChange, apply, read_did_change
from lsp_agent.server.framing import TransportLimits
from lsp_agent.server.line_document import LineDocument, LineWorkspace

URI = "file:///ws/doc%20one.txt"  # quoted, as editors send a name with a space
#: multi-line, CRLF, a lone CR, empty, astral characters (2 UTF-16 units, a surrogate pair), BMP non-ASCII
PIECES = ["a", "bc", "😀", "é", "\n", "\r\n", "\r", "x😀y", "\U0001d518\r\n", "    ", ""]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)
# Columns and lines past the ends too: both paths clamp them the same way.
positions = st.fixed_dictionaries({"line": st.integers(0, 12), "character": st.integers(0, 14)})
# rangeLength (deprecated, read by neither path) sent by some editors, not by others
range_changes = st.builds(lambda start, end, text, length: {"range": {"start": start, "end": end}, "text": text,
                                                            **({} if length is None else {"rangeLength": length})},
                          positions, positions, texts, st.none() | st.integers(0, 20))
whole_changes = st.builds(lambda text: {"text": text}, texts)
changes = st.one_of(range_changes, range_changes, range_changes, whole_changes)
notifications = st.lists(changes, min_size=0, max_size=3)


def notification(uri: str, version: int, content_changes: list[dict[str, Any]]) -> dict[str, Any]:
    # Through JSON and back: exactly what the transport hands on after parsing a frame.
    return json.loads(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": version}, "contentChanges": content_changes}}))


CONVERTER = make_converter()


def structured(raw: dict[str, Any]) -> types.DidChangeTextDocumentParams:
    """What pygls hands its didChange handler (server/transport.py `dispatch` → `structure_message`)."""
    message = CONVERTER.structure(copy.deepcopy(raw), types.DidChangeTextDocumentNotification)
    return message.params


def general_path(workspace: Workspace, raw: dict[str, Any]) -> None:
    """pygls's didChange handler (LanguageServerProtocol.lsp_text_document__did_change)."""
    params = structured(raw)
    for change in params.content_changes:
        workspace.update_text_document(params.text_document, change)


class Target:
    """The fast path's view of a server: its open documents and what it does after a change."""

    def __init__(self, workspace: LineWorkspace) -> None:
        self.workspace = workspace
        self.changed: list[str] = []
        self.failures: list[Exception] = []

    def line_document(self, uri: str) -> LineDocument | None:
        from urllib.parse import unquote

        document = self.workspace.text_documents.get(unquote(uri))
        return document if isinstance(document, LineDocument) else None

    def document_changed(self, uri: str) -> None:
        self.changed.append(uri)

    def change_failed(self, error: Exception) -> None:
        self.failures.append(error)


def opened(workspace: Workspace, text: str) -> Workspace:
    workspace.put_text_document(types.TextDocumentItem(uri=URI, language_id="text", version=1, text=text))
    return workspace


@settings(max_examples=300, deadline=None)
@given(initial=texts, sent=st.lists(notifications, max_size=10))
def test_random_notifications_leave_the_general_paths_text(initial: str, sent: list[list[dict[str, Any]]]) -> None:
    fast = opened(LineWorkspace(None), initial)
    assert isinstance(fast, LineWorkspace)
    general, pygls_own = opened(LineWorkspace(None), initial), opened(Workspace(None), initial)
    target = Target(fast)
    for version, content_changes in enumerate(sent, start=2):
        raw = notification(URI, version, content_changes)
        did_change = read_did_change(raw)
        assert did_change is not None, raw  # the plain shape: always the fast path's
        assert apply(target, did_change)
        general_path(general, raw)
        general_path(pygls_own, raw)
        ours = fast.get_text_document(URI)
        assert ours.source == general.get_text_document(URI).source == pygls_own.get_text_document(URI).source
        assert ours.lines == general.get_text_document(URI).lines
        assert ours.version == general.get_text_document(URI).version == pygls_own.get_text_document(URI).version
    assert target.changed == [URI] * len(sent)


def test_surrogate_pairs_are_counted_as_two_utf16_units() -> None:
    workspace = opened(LineWorkspace(None), "a😀b\r\n\U0001d518x\n")
    assert isinstance(workspace, LineWorkspace)
    target = Target(workspace)
    # after the emoji (units 1-2) and after U+1D518 on the next line: the position counts UTF-16 units
    raw = notification(URI, 2, [{"range": {"start": {"line": 0, "character": 3}, "end": {"line": 1, "character": 2}},
                                 "text": "-"}])
    did_change = read_did_change(raw)
    assert did_change is not None and apply(target, did_change)
    assert workspace.get_text_document(URI).source == "a😀-x\n"


# --- what the fast path leaves to the general path ---------------------------------------------------

VALID = notification(URI, 7, [{"range": {"start": {"line": 1, "character": 2}, "end": {"line": 3, "character": 4}},
                               "text": "t", "rangeLength": 5}, {"text": "whole"}])
CHANGE = ("params", "contentChanges", 0)
LEAVES: list[tuple[Any, ...]] = [
    ("params", "textDocument", "uri"), ("params", "textDocument", "version"),
    (*CHANGE, "range", "start", "line"), (*CHANGE, "range", "start", "character"),
    (*CHANGE, "range", "end", "line"), (*CHANGE, "range", "end", "character"),
    (*CHANGE, "text"), (*CHANGE, "rangeLength"), (*CHANGE, "range"), ("params", "contentChanges", 1, "text"),
    ("params", "contentChanges"), ("params", "textDocument"), ("params",), ("method",), ("jsonrpc",),
]
#: what an editor (or anything writing to the server) might put in a field: LSP's integer bounds and
#: one past them, the values cattrs coerces (true, "1", 1.0), and structures
edges = st.sampled_from([-1, 0, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**40, True, False, "1", 1.0])
scalars = st.one_of(edges, edges, st.none(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False),
                    st.sampled_from(["", "file:///x"]), st.text(max_size=4))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["line", "character", "x"]), inner, max_size=2)),
    max_leaves=4)


def mutate(message: dict[str, Any], path: tuple[Any, ...], action: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(message)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    if action == "replace":
        parent[path[-1]] = value
    elif action == "remove":
        del parent[path[-1]]
    else:  # a key neither path reads, beside this one
        assert isinstance(parent, dict)
        parent["extraKey"] = value
    return out


def general_reading(raw: dict[str, Any]) -> DidChange | None:
    """The general path's reading of a notification in the fast path's terms; None if it refuses it."""
    try:
        params = structured(raw)
    except Exception:
        return None
    read: list[RangeChange | str] = []
    for change in params.content_changes:
        if isinstance(change, types.TextDocumentContentChangePartial):
            start, end = change.range.start, change.range.end
            read.append(RangeChange(start.line, start.character, end.line, end.character, change.text))
        else:
            read.append(change.text)
    return DidChange(params.text_document.uri, params.text_document.version, tuple(read))


@settings(max_examples=1000, deadline=None)
@given(path=st.sampled_from(LEAVES), action=st.sampled_from(["replace", "remove", "extra"]),
       value=st.one_of(scalars, json_values))
def test_the_fast_path_takes_a_message_only_as_the_general_path_reads_it(path: tuple[Any, ...], action: str,
                                                                        value: Any) -> None:
    raw = mutate(VALID, path, action, value)
    fast = read_did_change(raw) if raw.get("method") == "textDocument/didChange" else None
    if fast is not None:
        # Taken: the general path would have read exactly this (never something it refuses, never a
        # coercion such as "1" → 1 or true → 1 that only it makes; repr tells true from 1).
        assert repr(general_reading(raw)) == repr(fast)


@pytest.mark.parametrize("raw", [
    mutate(VALID, ("params", "contentChanges", 0, "range", "start", "line"), "replace", -1),
    mutate(VALID, ("params", "contentChanges", 0, "range", "start", "line"), "replace", 2**31),
    mutate(VALID, ("params", "contentChanges", 0, "range", "end", "character"), "replace", True),
    mutate(VALID, ("params", "contentChanges", 0, "range", "end", "character"), "replace", "3"),
    mutate(VALID, ("params", "contentChanges", 0, "range", "end", "character"), "replace", 3.0),
    mutate(VALID, ("params", "textDocument", "version"), "replace", None),
    mutate(VALID, ("params", "textDocument", "version"), "replace", 2**31),
    mutate(VALID, ("params", "contentChanges", 0, "text"), "replace", 5),
    mutate(VALID, ("params", "contentChanges", 0, "range"), "replace", None),
    mutate(VALID, ("params", "contentChanges", 0, "rangeLength"), "replace", -5),
    mutate(VALID, ("params",), "extra", 1),
    {**VALID, "id": 4},  # a request, not a notification
], ids=["negative line", "line past int32", "bool", "string number", "float", "null version",
        "version past int32", "number as text", "null range", "negative rangeLength", "unknown key", "with an id"])
def test_what_the_fast_path_leaves_to_the_general_path(raw: dict[str, Any]) -> None:
    assert read_did_change(raw) is None


def test_a_document_the_target_does_not_have_is_left_untouched_to_the_general_path() -> None:
    workspace = LineWorkspace(None)
    target = Target(workspace)
    did_change = read_did_change(VALID)
    assert did_change is not None
    assert not apply(target, did_change)
    assert target.changed == []


def test_a_full_sync_document_is_left_to_the_general_path() -> None:
    workspace = LineWorkspace(None, sync_kind=types.TextDocumentSyncKind.Full)
    opened(workspace, "one\ntwo\n")
    target = Target(workspace)
    did_change = read_did_change(VALID)
    assert did_change is not None
    assert not apply(target, did_change)
    assert workspace.get_text_document(URI).source == "one\ntwo\n"
    assert target.changed == []


# --- the transport: order kept, the loop given turns --------------------------------------------------


class RecordingProtocol(Target):
    """A protocol for the Pump: messages that go the general way are recorded with the text they saw."""

    def __init__(self, workspace: LineWorkspace) -> None:
        super().__init__(workspace)
        self.log: list[tuple[str, str]] = []

    def document_changed(self, uri: str) -> None:
        super().document_changed(uri)
        self.log.append(("changed", self.workspace.get_text_document(URI).source))

    def structure_message(self, raw: dict[str, Any]) -> dict[str, Any]:
        return raw

    def handle_message(self, message: dict[str, Any]) -> None:
        self.log.append((str(message.get("method")), self.workspace.get_text_document(URI).source))

    def _send_data(self, data: Any) -> None:
        raise AssertionError(f"no error response expected: {data}")


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def insert(version: int, text: str, character: int = 0) -> dict[str, Any]:
    return notification(URI, version, [{"range": {"start": {"line": 0, "character": character},
                                                  "end": {"line": 0, "character": character}}, "text": text}])


def pump_for(protocol: RecordingProtocol) -> transport.Pump:
    return transport.Pump(protocol, TransportLimits())  # type: ignore[arg-type]


async def test_messages_after_a_fast_change_see_it_and_order_is_kept() -> None:
    workspace = opened(LineWorkspace(None), "")
    assert isinstance(workspace, LineWorkspace)
    protocol = RecordingProtocol(workspace)
    coerced = insert(3, "c")
    coerced["params"]["textDocument"]["version"] = "3"  # cattrs would read it: the general path's
    data = b"".join([frame(insert(2, "a")), frame({"jsonrpc": "2.0", "id": 1, "method": "agent/run", "params": {}}),
                     frame(coerced), frame(insert(4, "b", 1))])
    await pump_for(protocol).receive(data)
    assert protocol.log == [("changed", "a"), ("agent/run", "a"), ("textDocument/didChange", "a"), ("changed", "ab")]


async def test_a_burst_of_fast_changes_gives_the_loop_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = opened(LineWorkspace(None), "")
    assert isinstance(workspace, LineWorkspace)
    protocol = RecordingProtocol(workspace)
    burst = b"".join(frame(insert(v, "x")) for v in range(2, 52))
    seen: list[int] = []

    def another_task() -> None:
        seen.append(len(protocol.changed))

    # However short the batch, the loop gets a turn inside a burst...
    monkeypatch.setattr(transport, "FAST_BATCH_S", 0.0)
    asyncio.get_running_loop().call_soon(another_task)
    await pump_for(protocol).receive(burst)
    assert seen and seen[0] < 50

    # ...and a change costs no turn of its own: within one batch the burst runs through.
    monkeypatch.setattr(transport, "FAST_BATCH_S", 3600.0)
    protocol.changed.clear()
    asyncio.get_running_loop().call_soon(another_task)
    await pump_for(protocol).receive(burst)
    assert seen[1:] == [] and len(protocol.changed) == 50
    await asyncio.sleep(0)
    assert seen[1:] == [50]


async def test_a_change_that_fails_to_apply_is_told_and_the_next_message_is_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = opened(LineWorkspace(None), "")
    assert isinstance(workspace, LineWorkspace)
    protocol = RecordingProtocol(workspace)
    real = LineDocument.replace_range

    def fails_on_b(self: LineDocument, *args: Any) -> None:
        if args[-1] == "b":
            raise IndexError("no such line")
        real(self, *args)

    monkeypatch.setattr(LineDocument, "replace_range", fails_on_b)
    await pump_for(protocol).receive(frame(insert(2, "b")) + frame(insert(3, "a")) + frame(
        {"jsonrpc": "2.0", "id": 1, "method": "agent/status", "params": {}}))
    assert [type(e) for e in protocol.failures] == [IndexError]
    assert protocol.log == [("changed", "a"), ("agent/status", "a")]


def test_the_servers_protocol_takes_plain_changes_only_once_it_runs() -> None:
    from lsp_agent.server.agent_server import AgentServer
    from lsp_agent.server.did_change_fast_path import ChangeTarget

    protocol = AgentServer().protocol
    # The transport's fast path is on for the real server (it checks this once) ...
    assert isinstance(protocol, ChangeTarget)
    # ... and before `initialize` built the runtime, every change goes the general way.
    assert protocol.line_document(URI) is None
