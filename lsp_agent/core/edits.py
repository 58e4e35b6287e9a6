"""Edit plans: the pure description of a change, computed before anything is written.

A plan is applied by an `EditApplier` (disk for headless runs, the editor's
`workspace/applyEdit` in an editor session). Ranges use LSP conventions:
0-based lines, characters in UTF-16 code units, so a plan maps 1:1 onto a
WorkspaceEdit.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


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


def line_edit(lines: list[str], start: int, end: int, new_text: str) -> TextEdit:
    """A TextEdit replacing whole lines [start, end) of `lines` (each keeps its line ending).

    When the range runs to the end of a file without a final newline, it ends at the
    last character instead of the start of a line that does not exist.
    """
    if end < len(lines) or (lines and lines[-1].endswith(("\n", "\r"))):
        return TextEdit(start=Position(line=start, character=0), end=Position(line=end, character=0),
                        new_text=new_text)
    last = len(lines) - 1
    if start > last:  # appending after a last line that has no newline
        tail = lines[last] if lines else ""
        return TextEdit(start=Position(line=max(last, 0), character=utf16_len(tail)),
                        end=Position(line=max(last, 0), character=utf16_len(tail)), new_text=new_text)
    return TextEdit(start=Position(line=start, character=0),
                    end=Position(line=last, character=utf16_len(lines[last])), new_text=new_text)
