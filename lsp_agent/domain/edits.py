"""Edit plans: the pure description of a change, computed before anything is written.

A plan is applied by an `EditApplier` (disk for headless runs, the editor's
`workspace/applyEdit` in an editor session). Ranges use LSP conventions:
0-based lines, characters in UTF-16 code units, so a plan maps 1:1 onto a
WorkspaceEdit. `apply_text_edits` is the one reference for what such edits do to a text.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import operator
import re
from collections.abc import Iterator, Sequence
from enum import StrEnum
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

#: large texts are encoded, hashed and compared in pieces of this many code points: a whole-text
#: copy of a multi-megabyte file is a fresh allocation whose page faults cost more than the copy
#: (a 2.8 MB file's edit spent half its time faulting pages in)
PIECE = 1 << 14


def utf8_pieces(text: str, size: int = PIECE) -> Iterator[bytes]:
    """The text's UTF-8 bytes, `size` code points at a time. surrogateescape: text decoded from
    invalid UTF-8 encodes back to its original bytes. UTF-8 encodes each code point alone, so the
    pieces are the whole text's encoding, in order."""
    for at in range(0, len(text), size):
        yield text[at:at + size].encode("utf-8", "surrogateescape")


def digest(text: str) -> str:
    h = hashlib.sha256()
    for piece in utf8_pieces(text):
        h.update(piece)
    return h.hexdigest()


def utf8_len(text: str) -> int:
    """Size in bytes of the text as UTF-8 (undecodable bytes as themselves), without encoding an
    ASCII text (`isascii` is a flag on a str, not a scan)."""
    return len(text) if text.isascii() else sum(map(len, utf8_pieces(text)))


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units (LSP's default position encoding). Counting code points
    keeps lone surrogates (undecodable bytes) countable, unlike encoding."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


# LSP line breaks: a position's line counts these, nothing else (not U+2028, not form feed).
LINE_BREAK = re.compile(r"\r\n|\n|\r")


class Position(BaseModel):
    model_config = ConfigDict(frozen=True)
    line: int
    character: int


class TextEdit(BaseModel):
    model_config = ConfigDict(frozen=True)
    start: Position
    end: Position
    new_text: str


class CreateFile(BaseModel):
    kind: Literal["create"] = "create"
    path: str
    text: str


class UpdateFile(BaseModel):
    kind: Literal["update"] = "update"
    path: str
    edits: list[TextEdit]
    # The text the edits were computed against (the same object the planner read, not a copy): an
    # applier compares it with what is there now — exact, and a memcmp where two SHA-256 passes over
    # a multi-megabyte file cost ≈ 4 ms.
    base_text: str
    # Editor document version the edits were computed against; None when read from disk.
    base_version: int | None = None
    new_text: str


class DeleteFile(BaseModel):
    kind: Literal["delete"] = "delete"
    path: str
    base_text: str


class RenameFile(BaseModel):
    kind: Literal["rename"] = "rename"
    path: str
    new_path: str


FileOp = Annotated[CreateFile | UpdateFile | DeleteFile | RenameFile, Field(discriminator="kind")]


class EditPlan(BaseModel):
    ops: list[FileOp] = Field(default_factory=list)

    def touched_paths(self) -> list[str]:
        seen: dict[str, None] = {}
        for op in self.ops:
            seen[op.path] = None
            if isinstance(op, RenameFile):
                seen[op.new_path] = None
        return list(seen)


class ApplyFailure(StrEnum):
    VERSION_MISMATCH = "version_mismatch"
    REFUSED = "refused"
    CONFLICT = "conflict"
    IO_ERROR = "io_error"


class ApplyResult(BaseModel):
    ok: bool
    failure: ApplyFailure | None = None
    message: str = ""


class EditApplier(Protocol):
    async def apply(self, plan: EditPlan) -> ApplyResult:
        """Apply every op or none; never overwrite text the plan was not computed from, and never
        write an update whose edits do not make its `new_text` (`produces`): the planner does not
        re-check its own output, so this is the one check of it, at the boundary."""
        ...

    async def flush(self, paths: list[str]) -> ApplyResult:
        """Make disk equal to what the agent edited (the editor saves its buffers)."""
        ...


# --- applying TextEdits: pure, shared by the appliers (disk, editor, ACP client) and the planner --


class LineIndex:
    """Where each line of a text starts and ends (LSP line breaks), built once per text.

    Built with C-level passes (`str.split` or one regex split, then `accumulate` over the lengths),
    never a Python loop per line: a 100,000-line file costs a few milliseconds, not a whole-text
    scan per position."""

    __slots__ = ("ends", "starts", "text")
    ends: list[int]
    starts: list[int]
    text: str

    def __init__(self, text: str) -> None:
        self.text = text
        if "\r" not in text:
            lengths = list(map(len, text.split("\n")))
            # line k starts after the k lines before it and their one-character breaks
            self.starts = list(map(operator.add, itertools.accumulate(lengths[:-1], initial=0),
                                   range(len(lengths))))
        else:
            pieces = _LINE_BREAK_KEPT.split(text)  # line, break, line, ..., line
            offsets = list(itertools.accumulate(map(len, pieces), initial=0))
            lengths = list(map(len, pieces[::2]))
            self.starts = offsets[::2][: len(lengths)]
        self.ends = list(map(operator.add, self.starts, lengths))

    def offset(self, pos: Position) -> int:
        text = self.text
        if pos.line < 0 or pos.character < 0:
            raise ValueError(f"negative position {pos}")
        if pos.line >= len(self.starts):  # past the last line: LSP clients clamp to the end
            return len(text)
        offset, stop = self.starts[pos.line], self.ends[pos.line]
        if text[offset:stop].isascii():
            return min(offset + pos.character, stop)
        units = 0
        while offset < stop and units < pos.character:
            units += 2 if ord(text[offset]) > 0xFFFF else 1
            offset += 1
        return offset

    def position(self, offset: int) -> Position:
        """The LSP position of a code-point offset (an offset between the CR and LF of a CRLF
        counts the CR as a line break, as a scan of the text up to the offset would)."""
        text = self.text
        line = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[line]
        if offset > start and offset <= self.ends[line] + 1 and text[offset - 1:offset + 1] == "\r\n":
            return Position(line=line + 1, character=0)
        return Position(line=line, character=utf16_len(text[start:offset]))


_LINE_BREAK_KEPT = re.compile(r"(\r\n|\n|\r)")


#: `_FewLines` counts line breaks forward in blocks of this many characters
LINE_BLOCK = 1 << 16


class _FewLines:
    """Line offsets of an LF-only text without an index: a few edits near the end of a large file
    would pay for an index of every line. A lookup counts line breaks (`str.count`, C-level) in
    blocks from the last line it found, or from the start for an earlier line, then bisects inside
    the block: the text before the answer is counted once, and an edit's end, looked up after its
    start, costs only the text between them."""

    __slots__ = ("line", "start", "text")
    text: str
    line: int  # the last line found, and its start
    start: int

    def __init__(self, text: str) -> None:
        self.text, self.line, self.start = text, 0, 0

    def _start(self, line: int) -> int:
        """The smallest offset with `line` line breaks before it (the text's end past the last line)."""
        text, end = self.text, len(self.text)
        lo, below = (self.start, self.line) if line >= self.line else (0, 0)
        hi = min(lo + LINE_BLOCK, end)
        while (seen := below + text.count("\n", lo, hi)) < line and hi < end:
            lo, below, hi = hi, seen, min(hi + LINE_BLOCK, end)
        while lo < hi:
            mid = (lo + hi) // 2
            seen = below + text.count("\n", lo, mid)
            if seen >= line:
                hi = mid
            else:
                lo, below = mid + 1, seen + (text[mid] == "\n")
        # Past the last line `lo` is the end: a later line is past it too, so caching it is sound.
        self.line, self.start = line, lo
        return lo

    def offset(self, pos: Position) -> int:
        text = self.text
        if pos.line < 0 or pos.character < 0:
            raise ValueError(f"negative position {pos}")
        offset = self._start(pos.line)  # past the last line: the end, as LSP clients clamp
        stop = text.find("\n", offset)
        stop = len(text) if stop < 0 else stop
        if text[offset:stop].isascii():
            return min(offset + pos.character, stop)
        units = 0
        while offset < stop and units < pos.character:
            units += 2 if ord(text[offset]) > 0xFFFF else 1
            offset += 1
        return offset


def edit_offsets(text: str, edits: Sequence[TextEdit]) -> list[tuple[int, int]]:
    """The code-point span of each edit's range in `text`, in the edits' order."""
    # A few edits of an LF-only text look their lines up; many edits (or CR line breaks) index once.
    index_of: LineIndex | _FewLines = _FewLines(text) if len(edits) <= 4 and "\r" not in text else LineIndex(text)
    spans = []
    for index, edit in enumerate(edits):
        a = index_of.offset(edit.start)
        b = index_of.offset(edit.end)
        if b < a:
            raise ValueError(f"edit {index} ends before it starts")
        spans.append((a, b))
    return spans


def _in_text_order(text: str, edits: Sequence[TextEdit]) -> list[tuple[int, int, str]]:
    """(start, end, new text) of each edit in text order; overlapping ranges raise."""
    spans = sorted((a, b, index, edit.new_text)
                   for index, ((a, b), edit) in enumerate(zip(edit_offsets(text, edits), edits, strict=True)))
    cursor = 0
    for a, b, index, _ in spans:
        if a < cursor:
            raise ValueError(f"edit {index} overlaps an earlier edit")
        cursor = b
    return [(a, b, new) for a, b, _, new in spans]


def apply_text_edits(text: str, edits: Sequence[TextEdit]) -> str:
    """Apply LSP TextEdits (ranges in UTF-16 units, all relative to `text`); overlapping ranges raise."""
    out: list[str] = []
    cursor = 0
    for a, b, new in _in_text_order(text, edits):
        out.append(text[cursor:a])
        out.append(new)
        cursor = b
    out.append(text[cursor:])
    return "".join(out)


def produces(text: str, edits: Sequence[TextEdit], expected: str) -> bool:
    """Whether `apply_text_edits(text, edits) == expected`, compared piece by piece instead of
    building the result (overlapping ranges raise, as there)."""
    spans = _in_text_order(text, edits)
    if len(text) + sum(len(new) - (b - a) for a, b, new in spans) != len(expected):
        return False
    at = cursor = 0  # where `expected` and `text` are compared next
    for a, b, new in [*spans, (len(text), len(text), "")]:
        for piece in range(cursor, a, PIECE):
            if not expected.startswith(text[piece:min(piece + PIECE, a)], at + piece - cursor):
                return False
        at += a - cursor
        if not expected.startswith(new, at):
            return False
        at, cursor = at + len(new), b
    return True


def unmade(text: str, op: UpdateFile) -> str | None:
    """Why `op`'s edits applied to `text` do not make its `new_text`, or None when they do: the check
    every applier makes before an update has any effect (the planner does not re-check its output)."""
    try:
        if produces(text, op.edits, op.new_text):
            return None
    except ValueError as exc:
        return f"the edits of {op.path} do not apply: {exc}"
    return f"the edits of {op.path} do not produce the planned text"


def position_at(text: str, offset: int) -> Position:
    """The LSP position of a code-point offset into `text`: line breaks counted with `str.count`
    and the line start found with `rfind` (C-level, no per-line loop). A caller that needs many
    positions in one text builds a `LineIndex` once instead."""
    line = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    if "\r" in text:
        line += text.count("\r", 0, offset) - text.count("\r\n", 0, offset)
        line_start = max(line_start, text.rfind("\r", 0, offset) + 1)
    return Position(line=line, character=utf16_len(text[line_start:offset]))


def position_after(text: str, start: Position, at: int, offset: int) -> Position:
    """`position_at(text, offset)` for an offset at or after `at`, whose position `start` is known:
    only the text between them is counted (an edit's end after its start)."""
    if "\r" in text:
        return position_at(text, offset)
    breaks = text.count("\n", at, offset)
    if not breaks:
        return Position(line=start.line, character=start.character + utf16_len(text[at:offset]))
    line_start = text.rfind("\n", at, offset) + 1
    return Position(line=start.line + breaks, character=utf16_len(text[line_start:offset]))
