"""JSON from outside (a model's tool arguments, a provider's events, an editor's frames, an MCP
server's results), parsed only after its shape is known to be bounded.

`json.loads` recurses once per nesting level: 100,000 nested `[` raise `RecursionError` (not a
`ValueError`), and what survives the parse (a few hundred levels) breaks later recursion (pydantic,
`json.dumps`, our own walks). So before parsing, one linear scan checks the nesting depth, the
length of every string and the number of entries of every array and object, and stops at the first
bound crossed. String contents are skipped with `str.find`, so a large text argument costs one
search; a document too short to cross any bound is not scanned at all.

A document over a bound raises `JsonTooLarge`, a `json.JSONDecodeError`: every place that already
turns invalid JSON into a classified error handles it the same way, with a message that names the
bound ("nested deeper than 100 levels").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final, Literal

#: Deepest nesting accepted. Real payloads (tool arguments, LSP messages, provider events, MCP
#: results) stay under 20; 100 keeps every later recursive walk far from Python's limit of 1000.
MAX_DEPTH: Final = 100
#: Longest string, in characters as written (escapes included): above any text the harness accepts
#: elsewhere (a frame body is at most 64 MiB; a file write at most `limits.write_bytes`).
MAX_STRING_CHARS: Final = 64 * 1024 * 1024
#: Most entries in one array or object.
MAX_ITEMS: Final = 1_000_000

Bound = Literal["depth", "string", "items", "number"]


@dataclass(frozen=True)
class JsonBounds:
    depth: int = MAX_DEPTH
    string_chars: int = MAX_STRING_CHARS
    items: int = MAX_ITEMS


DEFAULT_BOUNDS: Final = JsonBounds()


class JsonTooLarge(json.JSONDecodeError):
    """A document over one of the bounds (it may be valid JSON: it is refused, not misread)."""

    def __init__(self, bound: Bound, message: str, doc: str, pos: int) -> None:
        super().__init__(message, doc, pos)
        self.bound: Bound = bound
        #: the message alone, without json's " line 1 column 5 (char 4)"
        self.reason = message


# The next structural character or quote. Everything else (numbers, literals, whitespace, `:`) is
# stepped over by the regex engine; string contents by `find`, never character by character in
# Python, so a megabyte of text argument costs microseconds.
_NEXT_TEXT = re.compile(r'[\[\]{},"]')
_NEXT_BYTES = re.compile(rb'[\[\]{},"]')


#: Below this size, counting brackets and commas (C loops over the whole text) is cheaper than the
#: scan and proves most documents within bounds; above it, strings dominate and the scan skips them.
_COUNT_FIRST_BELOW = 64 * 1024


def check(doc: str | bytes, bounds: JsonBounds = DEFAULT_BOUNDS) -> None:
    """Raise JsonTooLarge when `doc` crosses a bound; return when it does not (or when it is not JSON
    past some point: the parser reports that)."""
    size = len(doc)
    if size <= min(bounds.depth, bounds.string_chars, bounds.items):
        return  # too short to cross any bound (most tool calls and stream events)
    if size < _COUNT_FIRST_BELOW and size <= bounds.string_chars:
        if isinstance(doc, bytes):
            openers, commas = doc.count(b"[") + doc.count(b"{"), doc.count(b",")
        else:
            openers, commas = doc.count("[") + doc.count("{"), doc.count(",")
        if openers <= bounds.depth and commas < bounds.items:
            return
    _scan(doc, bounds)


def _scan(doc: str | bytes, bounds: JsonBounds) -> None:
    is_bytes = isinstance(doc, bytes)
    pattern: re.Pattern[Any] = _NEXT_BYTES if is_bytes else _NEXT_TEXT
    # one character: bytes index to ints, str to 1-character strings
    quote, comma, closers = (34, 44, (93, 125)) if is_bytes else ('"', ",", ("]", "}"))
    entries: list[int] = []  # per open container: the commas seen so far
    pos = 0
    while (found := pattern.search(doc, pos)) is not None:
        at = found.start()
        token = doc[at]
        if token == quote:
            end = _string_end(doc, at)
            if end < 0:
                return  # unterminated: the parser reports it
            if end - at - 1 > bounds.string_chars:
                raise _too_large("string", f"a string is longer than {bounds.string_chars} characters", doc, at)
            pos = end + 1
            continue
        pos = at + 1
        if token == comma:
            if entries:
                entries[-1] += 1
                if entries[-1] >= bounds.items:
                    raise _too_large("items", f"an array or object has more than {bounds.items} entries", doc, at)
        elif token in closers:
            if not entries:
                return  # unbalanced: the parser says so
            entries.pop()
        else:
            entries.append(0)
            if len(entries) > bounds.depth:
                raise _too_large("depth", f"nested deeper than {bounds.depth} levels", doc, at)


# A whole string, escapes included (unrolled, so it runs in linear time inside the regex engine).
_STRING_TEXT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STRING_BYTES = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _string_end(doc: Any, start: int) -> int:
    """Index of the quote closing the string opened at `start`, or -1. Most strings hold no escaped
    quote: one `find` (memchr). Where the first quote found is escaped, the regex engine walks the
    string once (each backslash pair skipped in C)."""
    is_bytes = isinstance(doc, bytes)
    end = doc.find(b'"' if is_bytes else '"', start + 1)
    if end > 0 and doc[end - 1] != (92 if is_bytes else "\\"):
        return int(end)
    whole = (_STRING_BYTES if is_bytes else _STRING_TEXT).match(doc, start)
    return whole.end() - 1 if whole is not None else -1


def _too_large(bound: Bound, message: str, doc: str | bytes, pos: int) -> JsonTooLarge:
    # json's error keeps the document for its line/column; a clipped copy is enough and keeps a
    # 64 MiB body from living on in a traceback.
    head = doc[: pos + 1]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    return JsonTooLarge(bound, message, text[-200:], min(pos, 199))


def loads(doc: str | bytes, bounds: JsonBounds = DEFAULT_BOUNDS) -> Any:
    """`json.loads` of a document within the bounds. Raises json.JSONDecodeError: JsonTooLarge for
    a bound crossed (also a number too long for Python's int conversion), the plain error for
    invalid JSON."""
    check(doc, bounds)
    try:
        return json.loads(doc)
    except json.JSONDecodeError:
        raise
    except UnicodeDecodeError as exc:  # bytes that are not UTF-8: invalid, not too large
        raise json.JSONDecodeError(f"not UTF-8 ({exc.reason})", "", exc.start) from None
    except RecursionError:  # the scan makes this unreachable; kept so no caller ever sees one
        raise JsonTooLarge("depth", f"nested deeper than {bounds.depth} levels", "", 0) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise JsonTooLarge("number", f"a number is too long to read ({exc})"[:200], "", 0) from None


def describe(exc: json.JSONDecodeError) -> str:
    """What is wrong, for a message: the bound crossed, or json's own text."""
    return exc.reason if isinstance(exc, JsonTooLarge) else str(exc)


_SCALAR_TEXT = re.compile(r'\s*:\s*(-?\d{1,20}(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.){0,1024}"|true|false|null)')
_SCALAR_BYTES = re.compile(rb'\s*:\s*(-?\d{1,20}(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.){0,1024}"|true|false|null)')


def top_level_scalar(doc: str | bytes, key: str) -> Any:
    """The scalar value of `key` in the top-level object of a document that may be too deep to parse
    (e.g. a JSON-RPC `id`, so a refused request is still answered by its id), or None. One linear
    scan, like `check`; only string, number, true/false/null values are read (up to 1024 chars)."""
    is_bytes = isinstance(doc, bytes)
    pattern: re.Pattern[Any] = _NEXT_BYTES if is_bytes else _NEXT_TEXT
    scalar: re.Pattern[Any] = _SCALAR_BYTES if is_bytes else _SCALAR_TEXT
    wanted: Any = json.dumps(key).encode() if is_bytes else json.dumps(key)
    quote, closers = (34, (93, 125)) if is_bytes else ('"', ("]", "}"))
    depth = 0
    pos = 0
    while (found := pattern.search(doc, pos)) is not None:
        at = found.start()
        token = doc[at]
        if token == quote:
            end = _string_end(doc, at)
            if end < 0:
                return None
            pos = end + 1
            if depth == 1 and doc[at:pos] == wanted and (value := scalar.match(doc, pos)) is not None:
                try:
                    return json.loads(value.group(1))
                except ValueError:
                    return None
            continue
        pos = at + 1
        if token in closers:
            depth -= 1
            if depth <= 0:
                return None
        elif token not in (44, ","):
            depth += 1
    return None


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether a parsed value (dicts, lists, scalars) nests deeper than `limit`: iterative, so a
    value too deep for recursion is measured safely; stops at the first container past the limit."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
