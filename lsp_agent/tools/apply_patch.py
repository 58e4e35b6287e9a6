"""The `apply_patch` tool: one exact replacement or a multi-file `*** Begin Patch` patch.

The whole patch is planned (every file's new content computed) before anything is applied,
and the applier writes all of it or none of it.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar, Self

from pydantic import Field, model_validator

from lsp_agent.core.paths import PathDenied, normalize, resolve_in_root
from lsp_agent.core.tools import Access, RelPath, StrictArgs, Tool, ToolContext, ToolResult, WriteText
from lsp_agent.domain.edits import ApplyFailure, CreateFile, UpdateFile, utf8_len
from lsp_agent.domain.history import ErrorKind
from lsp_agent.domain.ports import Document
from lsp_agent.osfiles.regular import NotRegularFile
from lsp_agent.tools.patch_grammar import AddOp, ParsedPatch, PatchParseError, parse_patch

if TYPE_CHECKING:
    from lsp_agent.tools.patch import FileChange, PlanFailure, Planned

#: a plan over files larger than this (bytes in all) is computed in a worker thread: planning is
#: linear in the text (a 100k-line hunk ≈ 20 ms) and would hold up the event loop — in the language
#: server, every editor request — for that long; smaller plans take less than the thread hop
PLAN_INLINE_BYTES = 1 << 20

_FORMS = ("give either `patch` (a '*** Begin Patch' ... '*** End Patch' text) or all three of `path`, "
          "`old_text` and `new_text`")

PATCH_HELP = """A patch looks like:
*** Begin Patch
*** Update File: src/app.py
@@ def greet():
-    print("Hi")
+    print("Hello")
*** Add File: src/new.py
+first line
*** Delete File: src/old.py
*** End Patch
`*** Move to: <path>` may follow an Update File line. Each hunk starts with `@@` (optionally
`@@ <a line just above the change>`); its lines start with ' ' (unchanged), '-' (remove) or '+' (add)."""


class ApplyPatchArgs(StrictArgs):
    patch: WriteText | None = Field(
        None,
        description="A multi-file patch: '*** Begin Patch', then sections '*** Add File: <path>' (every line "
                    "prefixed '+'), '*** Delete File: <path>', or '*** Update File: <path>' (optionally "
                    "followed by '*** Move to: <path>') with hunks: '@@' or '@@ <a line above the change>', "
                    "then lines prefixed ' ' (unchanged context, about 3 lines around each change), '-' "
                    "(remove) or '+' (add); then '*** End Patch'. Paths are relative to the workspace root. "
                    "Leave unset when using path/old_text/new_text.",
    )
    path: RelPath | None = Field(
        None, description="For one exact replacement: the file to edit, relative to the workspace root.")
    old_text: str | None = Field(
        None, description="For one exact replacement: the current text to replace, copied exactly (whole "
                          "lines are safest); it must occur exactly once in the file.")
    new_text: WriteText | None = Field(
        None, description="For one exact replacement: the text that replaces old_text (may be empty to "
                          "delete it).")

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        replacement = [self.path, self.old_text, self.new_text]
        if self.patch is not None and any(v is not None for v in replacement):
            raise ValueError(f"both forms were given: {_FORMS}, not both")
        if self.patch is None and any(v is None for v in replacement):
            missing = [n for n, v in zip(("path", "old_text", "new_text"), replacement, strict=True) if v is None]
            raise ValueError(f"missing {', '.join(missing)}: {_FORMS}")
        return self


class ApplyPatch(Tool[ApplyPatchArgs]):
    name = "apply_patch"
    access = Access.WRITE
    args_model: ClassVar[type[StrictArgs]] = ApplyPatchArgs
    summary = ("Edit files: either replace one exact piece of text (path, old_text, new_text), or apply a "
               "multi-file patch (add, update with context hunks, delete, move) given in `patch`. The change "
               "is all-or-nothing: if any file fails, no file is changed.")
    use_when = ("changing existing files; old_text/new_text for one small change, `patch` for several changes "
                "or files. Read the file first and copy the current lines exactly.")
    avoid_when = ("creating a brand-new file with nothing else to change (use write_file), or when you have "
                  "not read the current text of the file (use read_file first).")

    def paths(self, args: ApplyPatchArgs) -> Iterable[str]:
        if args.patch is None:
            return [args.path] if args.path is not None else []
        try:
            return parse_patch(args.patch).paths()
        except PatchParseError:
            return []  # run() reports the parse error with its line number

    async def run(self, args: ApplyPatchArgs, ctx: ToolContext) -> ToolResult:
        patch: ParsedPatch | None = None
        if args.patch is not None:
            try:
                patch = parse_patch(args.patch)
            except PatchParseError as exc:
                return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH,
                                          f"the patch does not parse: {exc}. Nothing was changed.\n{PATCH_HELP}")
            sources = [op.path for op in patch.ops if not isinstance(op, AddOp)]
            paths = patch.paths()
        else:
            assert args.path is not None and args.old_text is not None and args.new_text is not None
            sources = paths = [normalize(args.path)]
        for path in paths:
            try:
                resolve_in_root(ctx.root, path)
            except PathDenied as exc:
                return ToolResult.failure(ErrorKind.PATH_DENIED, f"{exc}. Nothing was changed.")
        for path in sources:
            if path in ctx.files.reread_required:
                return ToolResult.failure(
                    ErrorKind.TOOL_FAILURE,
                    f"{path} must be read again before it is edited (earlier edits failed, or your view of it "
                    f"is out of date). Call read_file on {path}, then retry with its current text.")
        try:
            docs: dict[str, Document | None] = {path: await ctx.documents.read(path) for path in paths}
        except NotRegularFile as exc:
            return ToolResult.failure(ErrorKind.TOOL_FAILURE, f"{exc}: only regular files are edited. "
                                                              "Nothing was changed.")
        sent = utf8_len(args.patch if args.patch is not None else args.new_text or "")
        if sent > ctx.settings.limits.write_bytes:  # the edit itself (the controller checks this too)
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"the edit is {sent} bytes, over the {ctx.settings.limits.write_bytes}-byte limit of one edit "
                "(setting limits.write_bytes). Nothing was changed. Make smaller edits.")
        limit = ctx.settings.limits.file_bytes
        total = 0
        for path, doc in docs.items():
            size = 0 if doc is None else utf8_len(doc.text)
            total += size
            if size > limit:
                return ToolResult.failure(
                    ErrorKind.TOOL_FAILURE,
                    f"{path} is {size} bytes, over the {limit}-byte limit of a file apply_patch edits "
                    "(setting limits.file_bytes). Nothing was changed. Edit it with run_command tools, or "
                    "raise the limit.")
        # the planner (matching, near-miss search, rendering) is imported when a patch is planned:
        # a run that never edits does not hold it in memory
        from lsp_agent.tools.patch import PlanFailure, plan_patch, plan_replacement

        if patch is not None:
            plan = functools.partial(plan_patch, patch, docs)
        else:
            assert args.path is not None and args.old_text is not None and args.new_text is not None
            plan = functools.partial(plan_replacement, sources[0], docs[sources[0]], args.old_text, args.new_text)
        outcome = plan() if total <= PLAN_INLINE_BYTES else await asyncio.to_thread(plan)
        if isinstance(outcome, PlanFailure):
            return self._plan_failed(outcome, ctx)
        too_big = self._too_big(outcome, limit)
        if too_big is not None:
            return too_big
        applied = await ctx.applier.apply(outcome.plan)
        if not applied.ok:
            if applied.failure in (ApplyFailure.CONFLICT, ApplyFailure.VERSION_MISMATCH):
                # The model's picture of these files is stale: make it look again before editing.
                ctx.files.reread_required.update(sources)
            reason = applied.failure.value if applied.failure else "failed"
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"the edit was not applied ({reason}): {applied.message or 'no detail'}. Nothing was changed. "
                f"Re-read {', '.join(sources) or 'the files'} with read_file and retry with the current text.")
        for path in sources:
            ctx.files.note_edit_ok(path)
        return ToolResult.success(_summary(outcome.changes), written=outcome.plan.touched_paths(),
                                  edits=sum(c.edits for c in outcome.changes))

    @staticmethod
    def _plan_failed(failure: PlanFailure, ctx: ToolContext) -> ToolResult:
        text = f"{failure.message} Nothing was changed."
        if failure.kind in ("no_match", "ambiguous"):
            limit = ctx.settings.limits.failed_edits_before_reread
            ctx.files.note_edit_failed(failure.path, limit)
            if failure.path in ctx.files.reread_required:
                text += (f" This was failed edit {ctx.files.failed_edits.get(failure.path, limit)} of "
                         f"{failure.path}: read it again with read_file before the next edit.")
        return ToolResult.failure(ErrorKind.TOOL_FAILURE, text)

    @staticmethod
    def _too_big(planned: Planned, limit: int) -> ToolResult | None:
        for op in planned.plan.ops:
            text = op.new_text if isinstance(op, UpdateFile) else op.text if isinstance(op, CreateFile) else ""
            size = utf8_len(text)
            if size > limit:
                return ToolResult.failure(
                    ErrorKind.TOOL_FAILURE,
                    f"{op.path} would be {size} bytes, over the {limit}-byte limit of a file apply_patch "
                    "produces (setting limits.file_bytes). Nothing was changed. Split the content into smaller "
                    "files.")
        return None


def _summary(changes: Iterable[FileChange]) -> str:
    rows: list[str] = []
    added = removed = files = 0
    for c in changes:
        name = f"{c.path} -> {c.new_path}" if c.new_path else c.path
        if c.action in ("M", "R") and not c.edits:
            detail = "no change" if c.action == "M" else ""
        elif c.action == "A":
            detail = f"+{c.added}"
        elif c.action == "D":
            detail = f"-{c.removed}"
        else:
            spans = [f"{a}" if a == b else f"{a}-{b}" for a, b in c.where[:5]] + (["..."] if len(c.where) > 5 else [])
            single = len(c.where) == 1 and c.where[0][0] == c.where[0][1]
            detail = f"+{c.added} -{c.removed}; {'line' if single else 'lines'} {', '.join(spans)}"
        if detail != "no change":
            files, added, removed = files + 1, added + c.added, removed + c.removed
        rows.append(f"{c.action} {name}" + (f" ({detail})" if detail else ""))
    head = f"OK: {'1 file' if files == 1 else f'{files} files'} changed (+{added} -{removed})"
    return "\n".join([head, *rows])
