"""Edit plans: the pure description of a change, computed before anything is written.

A plan is applied by an `EditApplier` (disk for headless runs, the editor's
`workspace/applyEdit` in an editor session). Ranges use LSP conventions:
0-based lines, characters in UTF-16 code units, so a plan maps 1:1 onto a
WorkspaceEdit. `apply_text_edits` is the one reference for what such edits do to a text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field


def digest(text: str) -> str:
    # surrogateescape: text decoded from invalid UTF-8 digests to its original bytes.
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


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
    base_digest: str
    # Editor document version the edits were computed against; None when read from disk.
    base_version: int | None = None
    new_text: str


class DeleteFile(BaseModel):
    kind: Literal["delete"] = "delete"
    path: str
    base_digest: str


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
        """Apply every op or none; never overwrite text the plan was not computed from."""
        ...

    async def flush(self, paths: list[str]) -> ApplyResult:
        """Make disk equal to what the agent edited (the editor saves its buffers)."""
        ...


# --- applying TextEdits: pure, shared by the disk applier, the editor bridge and the planner -----


def _line_bounds(text: str) -> tuple[list[int], list[int]]:
    starts, ends = [0], []
    for m in LINE_BREAK.finditer(text):
        ends.append(m.start())
        starts.append(m.end())
    ends.append(len(text))
    return starts, ends


def _offset(text: str, starts: list[int], ends: list[int], pos: Position) -> int:
    if pos.line < 0 or pos.character < 0:
        raise ValueError(f"negative position {pos}")
    if pos.line >= len(starts):  # past the last line: LSP clients clamp to the end
        return len(text)
    offset, stop, units = starts[pos.line], ends[pos.line], 0
    while offset < stop and units < pos.character:
        units += 2 if ord(text[offset]) > 0xFFFF else 1
        offset += 1
    return offset


def apply_text_edits(text: str, edits: Sequence[TextEdit]) -> str:
    """Apply LSP TextEdits (ranges in UTF-16 units, all relative to `text`); overlapping ranges raise."""
    starts, ends = _line_bounds(text)
    spans = []
    for index, edit in enumerate(edits):
        a = _offset(text, starts, ends, edit.start)
        b = _offset(text, starts, ends, edit.end)
        if b < a:
            raise ValueError(f"edit {index} ends before it starts")
        spans.append((a, b, index, edit.new_text))
    spans.sort()
    out: list[str] = []
    cursor = 0
    for a, b, index, new in spans:
        if a < cursor:
            raise ValueError(f"edit {index} overlaps an earlier edit")
        out.append(text[cursor:a])
        out.append(new)
        cursor = b
    out.append(text[cursor:])
    return "".join(out)


def position_at(text: str, offset: int) -> Position:
    """The LSP position of a code-point offset into `text`."""
    line = line_start = 0
    for m in LINE_BREAK.finditer(text, 0, offset):
        line, line_start = line + 1, m.end()
    return Position(line=line, character=utf16_len(text[line_start:offset]))
