"""`textDocument/didChange` applied straight from the parsed JSON, past pygls's dispatch.

An editor replaying a macro or a formatter sends thousands of changes in a burst; each one went
through cattrs structuring, pygls's dispatch (a uuid, futures, a generator, several `Protocol`
isinstance checks) and a loop turn of its own — about 0.1 ms, and a request queued behind the
burst waited for all of it. The shape every editor sends (a versioned identifier and changes with
a range, or a whole text) is read here with exact types and handed to the open `LineDocument`,
the very code the general path ends in, so the text is the same by construction.

Anything else goes the general way, which coerces or refuses it as before: another type where
an int or a string belongs (cattrs turns `"1"` into 1), a value outside LSP's integer ranges, a
key this reader does not know, a document that is not open, a server not ready for it. So this
path never decides what a message means, only that it is the plain case.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple, Protocol, runtime_checkable

from lsp_agent.server.line_document import LineDocument

log = logging.getLogger(__name__)

__all__ = ["DID_CHANGE", "ChangeTarget", "DidChange", "RangeChange", "apply", "read_did_change"]

DID_CHANGE = "textDocument/didChange"

#: LSP's `uinteger` and `integer` (lsprotocol refuses a value outside them)
_UINTEGER_MAX = 2**31 - 1
_INTEGER_MIN, _INTEGER_MAX = -(2**31), 2**31 - 1

_MESSAGE_KEYS = frozenset({"jsonrpc", "method", "params"})
_PARAMS_KEYS = frozenset({"textDocument", "contentChanges"})
_IDENTIFIER_KEYS = frozenset({"uri", "version"})
_RANGE_CHANGE_KEYS = frozenset({"range", "text"})
_RANGE_CHANGE_KEYS_WITH_LENGTH = frozenset({"range", "text", "rangeLength"})
_RANGE_KEYS = frozenset({"start", "end"})
_POSITION_KEYS = frozenset({"line", "character"})


# Named tuples, not frozen dataclasses: one is made per change, and a frozen dataclass's __init__
# sets each field through object.__setattr__ (a microsecond a change on a 2-CPU machine).
class RangeChange(NamedTuple):
    """A change with a range, in client units."""

    start_line: int
    start_character: int
    end_line: int
    end_character: int
    text: str


class DidChange(NamedTuple):
    uri: str
    version: int
    #: each a RangeChange, or a str: the whole new text
    changes: tuple[RangeChange | str, ...]


@runtime_checkable
class ChangeTarget(Protocol):
    """Where a plain didChange lands: the server's protocol (server/agent_server.py)."""

    def line_document(self, uri: str) -> LineDocument | None:
        """The open document a change of `uri` applies to now, or None when the general path must
        take the change (not open, not a LineDocument, the server not ready or shutting down)."""

    def document_changed(self, uri: str) -> None:
        """What the server does after any didChange (the general path's handler does the same)."""

    def change_failed(self, error: Exception) -> None:
        """Applying a change raised: told as pygls tells a notification handler's failure."""


def _is_uinteger(value: object) -> bool:
    # `type(...) is int`: a bool is an int to isinstance, and cattrs would structure it as 0 or 1.
    return type(value) is int and 0 <= value <= _UINTEGER_MAX


def _position(value: object) -> tuple[int, int] | None:
    if type(value) is not dict or value.keys() != _POSITION_KEYS:
        return None
    line, character = value["line"], value["character"]
    if not (_is_uinteger(line) and _is_uinteger(character)):
        return None
    return line, character


def _change(value: object) -> RangeChange | str | None:
    if type(value) is not dict:
        return None
    text = value.get("text")
    if type(text) is not str:
        return None
    keys = value.keys()
    if keys == {"text"}:
        return text
    if keys != _RANGE_CHANGE_KEYS and keys != _RANGE_CHANGE_KEYS_WITH_LENGTH:
        return None
    # The deprecated rangeLength is read by no one (pygls neither), only checked as lsprotocol does.
    if "rangeLength" in value and value["rangeLength"] is not None and not _is_uinteger(value["rangeLength"]):
        return None
    span = value["range"]
    if type(span) is not dict or span.keys() != _RANGE_KEYS:
        return None
    start, end = _position(span["start"]), _position(span["end"])
    if start is None or end is None:
        return None
    return RangeChange(start[0], start[1], end[0], end[1], text)


def read_did_change(message: dict[str, Any]) -> DidChange | None:
    """The notification if it has the plain shape with exact types, else None (the general path's)."""
    if message.keys() != _MESSAGE_KEYS or message["method"] != DID_CHANGE:
        return None
    params = message["params"]
    if type(params) is not dict or params.keys() != _PARAMS_KEYS:
        return None
    identifier, raw_changes = params["textDocument"], params["contentChanges"]
    if type(identifier) is not dict or identifier.keys() != _IDENTIFIER_KEYS or type(raw_changes) is not list:
        return None
    uri, version = identifier["uri"], identifier["version"]
    if type(uri) is not str or type(version) is not int or not _INTEGER_MIN <= version <= _INTEGER_MAX:
        return None
    changes = []
    for raw in raw_changes:
        change = _change(raw)
        if change is None:
            return None
        changes.append(change)
    return DidChange(uri, version, tuple(changes))


def apply(target: ChangeTarget, did_change: DidChange) -> bool:
    """Apply the changes as pygls would (each, then the version), then the server's own handling.
    False, with nothing done, when the target says the general path must take it."""
    document = target.line_document(did_change.uri)
    if document is None or not document.incremental:
        return False
    try:
        for change in did_change.changes:
            if isinstance(change, str):
                document.replace_all(change)
            else:
                document.replace_range(change.start_line, change.start_character, change.end_line,
                                       change.end_character, change.text)
            document.version = did_change.version
        target.document_changed(did_change.uri)
    except Exception as exc:
        # Where pygls's dispatch would catch a failing handler, this path must too: the changes
        # before it stay applied (as there), the failure is told, and the next message is read.
        log.exception("didChange of %s could not be applied", did_change.uri)
        target.change_failed(exc)
    return True
