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
    # surrogateescape: text decoded from invalid UTF-8 digests to its original bytes.
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units (LSP's default position encoding). Counting code points
    keeps lone surrogates (undecodable bytes) countable, unlike encoding."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


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
