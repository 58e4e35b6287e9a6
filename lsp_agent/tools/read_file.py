"""read_file: numbered lines of one text file, from the editor's buffer when it is open there.

Output is stable (no timestamps, no absolute paths) and bounded twice: by the number of lines
per call (`limits.read_lines`) and by the size of one tool result (`limits.result_chars`); a cut
always says where to continue.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import posixpath
import re
import stat
from pathlib import Path

from pydantic import Field

from lsp_agent.core.paths import PathDenied, normalize, resolve_in_root
from lsp_agent.core.tools import Access, RelPath, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.history import ErrorKind
from lsp_agent.domain.ports import Document
from lsp_agent.osfiles.regular import NotRegularFile, kind_of
from lsp_agent.settings.config import Limits

_DEFAULTS = Limits()
# Used until Limits grows a `read_line_chars` field (requested from the lead).
_SURROGATE = re.compile("[\udc80-\udcff]")
#: Up to this many characters a file is rendered on the event loop (tens of microseconds).
_INLINE_CHARS = 16 * 1024
# Room kept free for the header and the closing notes when packing lines under result_chars.
_RESERVED_CHARS = 400


class ReadFileArgs(StrictArgs):
    path: RelPath = Field(
        description="File path relative to the workspace root, e.g. 'src/app.py'. "
        "No absolute paths and no '..' leaving the workspace."
    )
    start_line: int | None = Field(
        None, ge=1,
        description="First line to return, 1-based. Omit to start at line 1.",
    )
    end_line: int | None = Field(
        None, ge=1,
        description="Last line to return, 1-based and inclusive; must be >= start_line. Omit to read "
        f"to the end. At most {_DEFAULTS.read_lines} lines are returned per call (configurable).",
    )


def parse_generated_globs(entries: list[str]) -> list[tuple[str, str | None]]:
    """`tools.generated_globs` entries are `glob`, `glob=source` or `glob => source`.

    The glob is matched with fnmatch against the workspace-relative path (`*` also crosses '/';
    a leading `**/` also matches files at the top level). The source is a free-form hint shown to
    the model, usually the path of the file the generated one is built from.
    """
    parsed: list[tuple[str, str | None]] = []
    for raw in entries:
        if "=>" in raw:
            glob, _, source = raw.partition("=>")
        elif "=" in raw:
            glob, _, source = raw.partition("=")
        else:
            glob, source = raw, ""
        glob = glob.strip()
        if glob:
            parsed.append((glob, source.strip() or None))
    return parsed


def generated_source(path: str, entries: list[str]) -> tuple[bool, str | None]:
    """(is the path generated?, its source hint when configured)."""
    for glob, source in parse_generated_globs(entries):
        candidates = [glob]
        if glob.startswith("**/"):
            candidates.append(glob[3:])
        if any(fnmatch.fnmatchcase(path, g) for g in candidates):
            return True, source
    return False, None


def _display_path(raw: str) -> str:
    # Lexical normalisation only: keep the name the editor knows the buffer by (no symlink resolution).
    return posixpath.normpath(normalize(raw))


def _missing(target: Path, rel: str) -> ToolResult:
    hint = "Use list_dir on its directory, or search_code to find the file."
    parent = target.parent
    if parent.is_dir():
        try:
            names = sorted(os.listdir(parent))
        except OSError:
            names = []
        import difflib  # a missing file only: a run that reads what exists does not hold it

        close = difflib.get_close_matches(target.name, names, n=3, cutoff=0.6)
        if close:
            prefix = posixpath.dirname(rel)
            shown = ", ".join(posixpath.join(prefix, n) for n in close)
            hint = f"Similar names in that directory: {shown}. " + hint
    return ToolResult.failure(ErrorKind.TOOL_FAILURE, f"ERROR: {rel} does not exist. {hint}")


def _locate(root: Path, rel: str, limit: int, disk: DiskDocuments | None) -> tuple[Path | ToolResult, Document | None]:
    """The file `rel` names, or why it cannot be read — file system work, so called in a thread: one
    hop for the path check, the directory test and the size check together, and for the read itself
    when the documents are the disk's (`disk`)."""
    try:
        target = resolve_in_root(root, rel)
    except PathDenied as exc:
        return ToolResult.failure(ErrorKind.PATH_DENIED, f"ERROR: {exc}"), None
    try:
        mode, size = (found := target.stat()).st_mode, found.st_size
    except OSError:
        return target, None  # missing (or unreadable): the document source says which
    refused = _refusal(rel, mode, size, limit)
    if refused is not None:
        return refused, None
    try:
        return target, disk.read_sync(rel) if disk is not None else None
    except NotRegularFile as exc:  # swapped for a special file since the stat
        return _special(rel, exc.kind), None


def _special(rel: str, kind: str) -> ToolResult:
    return ToolResult.failure(ErrorKind.TOOL_FAILURE,
                              f"ERROR: {rel} is {kind}, not a regular file; it was not opened (reading it "
                              "could block forever or never end). Read regular files only.")


def _refusal(rel: str, mode: int, size: int, limit: int) -> ToolResult | None:
    if stat.S_ISDIR(mode):
        return ToolResult.failure(ErrorKind.TOOL_FAILURE,
                                  f"ERROR: {rel} is a directory. Use list_dir to see its entries.")
    if not stat.S_ISREG(mode):
        return _special(rel, kind_of(mode))
    if stat.S_ISREG(mode) and size > limit:
        # Refused before a byte is read: memory and time stay bounded whatever the file.
        return ToolResult.failure(
            ErrorKind.TOOL_FAILURE,
            f"ERROR: {rel} is {size} bytes, over the read limit of {limit} bytes (limits.read_bytes); "
            "it was not read. Use search_code with a specific pattern, or ask the user for the part "
            "you need.",
        )
    return None


def _undecodable(text: str) -> bool:
    # DiskDocuments decodes with surrogateescape: bytes that are not UTF-8 become lone surrogates.
    return _SURROGATE.search(text) is not None


class ReadFile(Tool[ReadFileArgs]):
    name = "read_file"
    access = Access.READ
    args_model = ReadFileArgs
    summary = (
        "Read a text file and return its lines numbered from 1 (`     N<TAB>text`). Reads the editor's "
        "unsaved buffer when the file is open there, else the file on disk. Returns at most "
        f"{_DEFAULTS.read_lines} lines per call; a longer file ends with "
        "`[TRUNCATED] ... continue with start_line=N`. Very long lines are cut and marked. "
        "Generated files return a pointer to their source instead of their content. Files over "
        f"{_DEFAULTS.read_bytes} bytes and binary files are reported, not read."
    )
    use_when = (
        "you need the exact current text of a file before editing it or to answer a question about it; "
        "use start_line/end_line to read a region of a large file."
    )
    avoid_when = (
        "you do not know where something is (use search_code), you want the files of a directory "
        "(use list_dir), or the file is binary."
    )

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        rel = _display_path(args.path)
        disk = ctx.documents if isinstance(ctx.documents, DiskDocuments) else None
        located, doc = await asyncio.to_thread(_locate, ctx.root, rel, ctx.settings.limits.read_bytes, disk)
        if isinstance(located, ToolResult):
            return located
        if args.start_line is not None and args.end_line is not None and args.end_line < args.start_line:
            return ToolResult.failure(
                ErrorKind.PARAMETER_MISMATCH,
                f"ERROR: end_line ({args.end_line}) is before start_line ({args.start_line}). "
                "Give end_line >= start_line, or omit end_line to read on from start_line.",
            )
        if disk is None:  # editor buffers first: the source decides
            try:
                doc = await ctx.documents.read(rel)
            except NotRegularFile as exc:
                return _special(rel, exc.kind)
        if doc is None:
            return await asyncio.to_thread(_missing, located, rel)
        generated, source = generated_source(rel, ctx.settings.tools.generated_globs)
        if generated:
            pointer = source or "its generator's input (no source is configured for this file)"
            return ToolResult.success(
                f"OK: {rel} is generated; edit its source instead: {pointer}",
                read=[], generated=True, source=source,
            )
        # Scanning and splitting a large file is CPU work: off the event loop, unless the file is so
        # small that the thread hop would cost more than the work.
        if len(doc.text) <= _INLINE_CHARS:
            result = self._check_and_render(rel, doc.text, args, ctx.settings.limits)
        else:
            result = await asyncio.to_thread(self._check_and_render, rel, doc.text, args, ctx.settings.limits)
        if result.ok:
            ctx.files.note_read(rel, ctx.step)
        return result

    def _check_and_render(self, rel: str, text: str, args: ReadFileArgs, limits: Limits) -> ToolResult:
        if "\x00" in text:
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"ERROR: {rel} is a binary file (it contains NUL bytes); read_file shows text files only.",
            )
        if _undecodable(text):
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"ERROR: {rel} is not UTF-8 text (binary or another encoding); read_file shows UTF-8 "
                "text only. Use search_code to find readable lines in it.",
            )
        return self._render(rel, text, args, limits)

    def _render(self, rel: str, text: str, args: ReadFileArgs, limits: Limits) -> ToolResult:
        budget = max(limits.result_chars - _RESERVED_CHARS, limits.result_chars // 2)
        # One cut line (number, text and cut marker) must always fit in the budget.
        line_chars = min(limits.read_line_chars, budget - 60)
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        if text == "":
            lines = []
        total = len(lines)
        crlf = total > 0 and all(line.endswith("\r") for line in lines[: min(total, 50)])
        start = args.start_line or 1
        if total == 0:
            if start == 1:
                return ToolResult.success(f"OK: {rel} is empty (0 lines)", read=[rel], lines=0)
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE, f"ERROR: start_line={start} is past the end: {rel} is empty (0 lines)."
            )
        if start > total:
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"ERROR: start_line={start} is past the end: {rel} has {total} lines. "
                f"Use a start_line between 1 and {total}.",
            )
        wanted_end = min(args.end_line or total, total)
        body: list[str] = []
        used = 0
        cut_lines = 0
        end = start - 1
        for number in range(start, min(wanted_end, start + limits.read_lines - 1) + 1):
            content = lines[number - 1].removesuffix("\r")
            too_long = len(content) > line_chars
            if too_long:
                content = f"{content[:line_chars]} [... line cut: {len(content)} characters in total]"
            row = f"{number:>6}\t{content}"
            # Always return at least one line, so a call can never make no progress.
            if body and used + len(row) + 1 > budget:
                break
            cut_lines += too_long
            body.append(row)
            used += len(row) + 1
            end = number
        header = f"OK: {rel} lines {start}-{end} of {total}"
        if crlf:
            header += " (CRLF line endings, shown without the \\r)"
        out = [header, *body]
        if cut_lines:
            out.append(f"[NOTE] {cut_lines} line(s) longer than {line_chars} characters were cut.")
        truncated = end < wanted_end
        if truncated:
            why = (
                f"at most {limits.read_lines} lines per call"
                if end - start + 1 >= limits.read_lines
                else f"the result size limit of {limits.result_chars} characters"
            )
            out.append(
                f"[TRUNCATED] showed lines {start}-{end} of {total} ({why}); "
                f"continue with start_line={end + 1}"
            )
        return ToolResult.success(
            "\n".join(out), read=[rel], lines=total, start_line=start, end_line=end, truncated=truncated
        )
