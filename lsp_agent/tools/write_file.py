"""The `write_file` tool: create a new file (never overwrite one; edits go through apply_patch)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from lsp_agent.core.paths import PathDenied, normalize, resolve_in_root
from lsp_agent.core.tools import Access, RelPath, StrictArgs, Tool, ToolContext, ToolResult, WriteText
from lsp_agent.domain.edits import CreateFile, EditPlan, utf8_len
from lsp_agent.domain.history import ErrorKind
from lsp_agent.osfiles.regular import NotRegularFile


class WriteFileArgs(StrictArgs):
    path: RelPath = Field(description="Path of the NEW file, relative to the workspace root (no '..', no "
                                      "absolute paths). Missing parent directories are created.")
    content: WriteText = Field(description="The complete text of the new file (UTF-8, within the write size "
                                           "limit, 1,000,000 bytes by default); end it with a newline.")


def _blocker(root: Path, target: Path) -> str | None:
    """Why `target` cannot be created: it exists, or a parent is a file."""
    if target.exists() or target.is_symlink():
        return "exists"
    for parent in target.parents:
        if parent == root or root not in parent.parents:
            break
        if parent.exists() and not parent.is_dir():
            return f"parent {parent.relative_to(root).as_posix()} is a file"
    return None


class WriteFile(Tool[WriteFileArgs]):
    name = "write_file"
    access = Access.WRITE
    args_model: ClassVar[type[StrictArgs]] = WriteFileArgs
    summary = "Create a new file with the given content (parent directories are created)."
    use_when = "adding a file that does not exist yet."
    avoid_when = ("the file already exists: use apply_patch to change it (this tool refuses to overwrite), "
                  "or apply_patch with '*** Add File:' when creating it together with other edits.")

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        path = normalize(args.path)
        try:
            target = resolve_in_root(ctx.root, path)
        except PathDenied as exc:
            return ToolResult.failure(ErrorKind.PATH_DENIED, f"{exc}. Nothing was written.")
        size = utf8_len(args.content)
        limit = ctx.settings.limits.write_bytes
        if size > limit:
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"the content is {size} bytes, over the {limit}-byte limit. Nothing was written. Split it into "
                "smaller files.")
        # An open, unsaved editor buffer counts as existing too.
        blocker = await asyncio.to_thread(_blocker, ctx.root.resolve(), target)
        try:
            if blocker is None and await ctx.documents.read(path) is not None:
                blocker = "exists"
        except NotRegularFile:
            blocker = "exists"  # a FIFO, socket or device by that name: never opened, never replaced
        if blocker == "exists":
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"{path} already exists; write_file only creates new files. Use apply_patch to change {path} "
                "(read it first), or pick another path.")
        if blocker is not None:
            return ToolResult.failure(ErrorKind.TOOL_FAILURE,
                                      f"cannot create {path}: {blocker}. Nothing was written.")
        applied = await ctx.applier.apply(EditPlan(ops=[CreateFile(path=path, text=args.content)]))
        if not applied.ok:
            reason = applied.failure.value if applied.failure else "failed"
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"{path} was not created ({reason}): {applied.message or 'no detail'}. Check with list_dir "
                "whether it exists now.")
        lines = args.content.count("\n") + (0 if args.content.endswith("\n") or not args.content else 1)
        return ToolResult.success(f"created {path} ({lines} lines, {size} bytes)", written=[path])
