"""search_code: regex search over the workspace, with ripgrep when installed, else in Python.

Both engines produce the same result for the same tree: matches sorted by path (component by
component) then line, `path:line: text`, the same skip list, symlinks and binary files skipped,
and the same glob semantics (gitignore style, as ripgrep's --glob). The pattern dialect is
Python's `re`: it is validated with `re` first, and a pattern ripgrep cannot compile (look-around,
back-references) is searched by the Python engine instead.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from lsp_agent.core.paths import PathDenied, printable, resolve_in_root
from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.domain.history import ErrorKind
from lsp_agent.osfiles.regular import read_regular_bytes
from lsp_agent.settings.config import Limits
from lsp_agent.tools.internal import InternalStall, run_internal
from lsp_agent.tools.list_dir import SKIP_NAMES, IgnoreSet, git_ignored

_DEFAULTS = Limits()


@dataclass(frozen=True)
class Match:
    path: str
    line: int
    text: str  # the raw line, without its line terminator

    def key(self) -> tuple[list[str], int]:
        return self.path.split("/"), self.line


@dataclass
class Found:
    matches: list[Match] = field(default_factory=list)
    complete: bool = True  # False when the engine's output was cut and the total is a lower bound
    engine: str = "python"  # which engine answered; metadata only, never in the text
    note: str = ""  # what the model must know about how the search was made (ignore rules unknown)


# --- globs ---------------------------------------------------------------------------------------


def _translate_segment(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if ch == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
            continue
        if ch == "*":
            while i + 1 < len(glob) and glob[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            close = glob.find("]", i + 2 if glob[i + 1:i + 2] in ("!", "^") else i + 1)
            if close == -1:
                out.append(re.escape(ch))
            else:
                body = glob[i + 1:close]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = close
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _expand_braces(glob: str) -> list[str]:
    """'{a,b/c}.py' -> ['a.py', 'b/c.py'] (braces may hold '/', so expand before splitting paths)."""
    open_at = glob.find("{")
    close_at = glob.find("}", open_at + 1)
    if open_at == -1 or close_at == -1:
        return [glob]
    head, body, rest = glob[:open_at], glob[open_at + 1:close_at], glob[close_at + 1:]
    return [expanded for option in body.split(",") for expanded in _expand_braces(head + option + rest)]


def _translate_path(glob: str) -> str:
    parts = glob.split("/")
    pieces: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            # '**/' is zero or more directories; a trailing '/**' is everything below.
            pieces.append(".*" if last else "(?:[^/]+/)*")
        else:
            pieces.append(_translate_segment(part) + ("" if last else "/"))
    return "".join(pieces)


def glob_matcher(glob: str) -> Callable[[str], bool]:
    """A predicate on workspace-relative file paths, with ripgrep's --glob semantics.

    A glob without '/' matches the file name at any depth ('*.py'); with '/', the whole path from
    the root ('src/*.py' is only direct children of src). '*' and '?' never cross '/', '**' spans
    directories ('src/**/*.py', '**/test_*.py'), '{a,b}' alternates, '[...]' is a class.
    """
    anchored = "/" in glob.rstrip("/")
    alternatives = _expand_braces(glob.lstrip("/"))
    regex = re.compile("(?:" + "|".join(_translate_path(g) for g in alternatives) + r")\Z", re.S)
    if anchored:
        return lambda path: regex.match(path) is not None
    return lambda path: regex.match(path.rsplit("/", 1)[-1]) is not None


def _check_glob(glob: str) -> str | None:
    if glob.startswith("!"):
        return "negated globs are not supported; give the files to include, e.g. 'src/**/*.py'"
    if glob.startswith("/") or os.path.isabs(glob):
        return "the path glob must be relative to the workspace root, e.g. 'src/**/*.py'"
    if ".." in glob.replace("\\", "/").split("/"):
        return "the path glob may not contain '..'; it is matched inside the workspace only"
    if "\x00" in glob:
        return "the path glob contains a NUL byte"
    return None


# --- the two engines -----------------------------------------------------------------------------


def _decode(value: dict[str, str]) -> str:
    if "text" in value:
        return value["text"]
    return base64.b64decode(value.get("bytes", "")).decode("utf-8", errors="replace")


async def search_ripgrep(root: Path, pattern: str, glob: str | None, timeout_s: float,
                         max_bytes: int = _DEFAULTS.read_bytes) -> Found | None:
    """Search with rg; None when rg could not run the pattern (the caller falls back to Python)."""
    argv = ["rg", "--json", "--no-config", "--hidden", "--no-messages", "--no-follow",
            f"--max-filesize={max_bytes}", "-e", pattern]
    if glob:
        argv += ["--glob", glob]
    # Later globs win in ripgrep, so the skip list comes after the model's glob.
    for name in sorted(SKIP_NAMES):
        argv += ["--glob", f"!{name}"]
    argv += ["--", "."]
    outcome = await run_internal(argv, root, timeout_s)  # InternalStall: the caller searches in Python
    found = Found(complete=not outcome.output_truncated, engine="ripgrep")
    for raw in outcome.output.splitlines():
        if not raw.startswith("{"):
            continue
        try:
            event = json.loads(raw)
        except ValueError:
            continue  # a line cut by the capture limit
        if event.get("type") != "match":
            continue
        data = event["data"]
        path = _decode(data["path"]).removeprefix("./")
        text = _decode(data["lines"]).removesuffix("\n")
        found.matches.append(Match(path, int(data["line_number"]), text))
    if outcome.exit_code == 2 and not found.matches:
        return None  # the pattern (or rg itself) failed: use the Python engine
    return found


def search_python(root: Path, regex: re.Pattern[str], glob: str | None, ignore: IgnoreSet,
                  max_bytes: int = _DEFAULTS.read_bytes) -> Found:
    """Walk the tree like ripgrep does (no symlinks, skip list, ignored and binary files skipped)."""
    matches_glob = glob_matcher(glob) if glob else None
    found = Found()

    def walk(directory: Path, prefix: str) -> None:
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            rel = prefix + entry.name
            if entry.name in SKIP_NAMES or entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if not ignore.ignored(rel, True):
                    walk(Path(entry.path), rel + "/")
            elif entry.is_file(follow_symlinks=False):
                if ignore.ignored(rel, False) or (matches_glob and not matches_glob(rel)):
                    continue
                search_file(Path(entry.path), rel)

    def search_file(path: Path, rel: str) -> None:
        try:
            if path.stat().st_size > max_bytes:
                return  # over the read limit: never read, as rg --max-filesize
            # never blocks: a name swapped for a FIFO since the walk saw a file is skipped, as rg does
            data = read_regular_bytes(path, max_bytes, follow_symlinks=False)
        except OSError:
            return
        if b"\x00" in data:
            return  # binary, as ripgrep decides by default
        text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        for number, line in enumerate(lines, start=1):
            if regex.search(line):
                found.matches.append(Match(rel, number, line))

    walk(root, "")
    return found


# --- the tool ------------------------------------------------------------------------------------


class SearchCodeArgs(StrictArgs):
    pattern: str = Field(
        min_length=1,
        description="Regular expression (Python re syntax), matched against single lines; "
        "case-sensitive (prefix with (?i) to ignore case). Escape regex characters for literal "
        r"text, e.g. 'foo\(' .",
    )
    path: str | None = Field(
        None,
        description="Optional glob limiting the files searched, relative to the workspace root: "
        "'*.py' matches by file name at any depth, 'src/**/*.py' by path; a directory name such as "
        "'src' searches everything under it. Omit to search the whole workspace.",
    )
    max_results: int | None = Field(
        None, ge=1,
        description=f"Most matching lines to return, 1 to {_DEFAULTS.search_results} "
        f"(the configured limit); default {_DEFAULTS.search_results}.",
    )


class SearchCode(Tool[SearchCodeArgs]):
    name = "search_code"
    access = Access.READ
    args_model = SearchCodeArgs
    summary = (
        "Search the workspace for lines matching a regular expression; returns `path:line: text` "
        "sorted by path and line, first line `OK: N matches`. Skips .git, node_modules, build "
        "output, caches, git-ignored, binary and symlinked files, and files over "
        f"{_DEFAULTS.read_bytes} bytes. Long lines are cut."
    )
    use_when = "you need to find where a name, string or pattern occurs, or which file defines something."
    avoid_when = (
        "you already know the file and want its content (use read_file), or you want the layout "
        "of a directory (use list_dir)."
    )

    def __init__(self, use_ripgrep: bool | None = None) -> None:
        # None: use rg when installed. False forces the Python engine (tests, locked-down hosts).
        self.use_ripgrep = shutil.which("rg") is not None if use_ripgrep is None else use_ripgrep

    async def run(self, args: SearchCodeArgs, ctx: ToolContext) -> ToolResult:
        limits = ctx.settings.limits
        max_results = args.max_results if args.max_results is not None else limits.search_results
        if max_results > limits.search_results:
            return ToolResult.failure(
                ErrorKind.PARAMETER_MISMATCH,
                f"ERROR: max_results={max_results} is above the limit of {limits.search_results}. "
                "Use a smaller max_results and a narrower pattern or path glob.",
            )
        try:
            regex = re.compile(args.pattern)
        except re.error as exc:
            return ToolResult.failure(
                ErrorKind.PARAMETER_MISMATCH,
                f"ERROR: invalid regular expression {args.pattern!r}: {exc}. Fix the pattern "
                "(escape characters such as ( [ { . * + ? for literal text) and search again.",
            )
        glob = await self._glob(args.path, ctx)
        if isinstance(glob, ToolResult):
            return glob
        try:
            found = await self._search(args.pattern, regex, glob, ctx)
        except TimeoutError:
            return ToolResult.failure(
                ErrorKind.TIMEOUT,
                f"ERROR: the search timed out after {limits.command_timeout_s:g}s. "
                "Narrow it with a path glob or a more specific pattern.",
            )
        return self._render(found, max_results, limits)

    async def _glob(self, raw: str | None, ctx: ToolContext) -> str | ToolResult | None:
        if raw is None or raw.strip() in ("", ".", "./", "**"):
            return None
        glob = raw.strip().replace("\\", "/").removeprefix("./")
        problem = _check_glob(glob)
        if problem:
            return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH, f"ERROR: {problem}.")
        if not any(ch in glob for ch in "*?[{"):
            # A plain directory path means "everything under it".
            try:
                target = resolve_in_root(ctx.root, glob)
            except PathDenied as exc:
                return ToolResult.failure(ErrorKind.PATH_DENIED, f"ERROR: {exc}")
            if target.is_dir():
                return "/" + glob.rstrip("/") + "/**"
            if target.is_file():
                return "/" + glob
        return glob

    async def _search(self, pattern: str, regex: re.Pattern[str], glob: str | None,
                      ctx: ToolContext) -> Found:
        limits = ctx.settings.limits
        root = ctx.root.resolve()
        stalled: str | None = None
        if self.use_ripgrep:
            try:
                found = await search_ripgrep(root, pattern, glob, limits.internal_timeout_s, limits.read_bytes)
            except FileNotFoundError:
                found = None  # rg vanished since start-up
            except InternalStall as exc:
                # rg blocked on a file it reads (a FIFO .gitignore): git would block on it too.
                found, stalled = None, str(exc)
            if found is not None:
                return found
        if stalled is None:
            ignore = await git_ignored(root, ".", limits.internal_timeout_s)
        else:
            ignore = IgnoreSet(unknown=stalled)
        found = await asyncio.wait_for(asyncio.to_thread(search_python, root, regex, glob, ignore,
                                                         limits.read_bytes), limits.command_timeout_s)
        found.note = ignore.note()
        return found

    def _render(self, found: Found, max_results: int, limits: Limits) -> ToolResult:
        matches = sorted(found.matches, key=Match.key)
        total = len(matches)
        shown = matches[:max_results]
        files = sorted({m.path for m in matches}, key=lambda p: p.split("/"))
        shown_files = sorted({m.path for m in shown}, key=lambda p: p.split("/"))
        count = f"{total}" if found.complete else f"at least {total}"
        if total == 0:
            return ToolResult.success(
                "OK: 0 matches. Try a broader pattern, (?i) for case-insensitive, or another path glob."
                + found.note,
                matches=0, files=[], truncated=False, engine=found.engine,
            )
        out = [f"OK: {count} matches in {len(files)} files"]
        for m in shown:
            text = m.text.strip()
            if len(text) > limits.search_line_chars:
                text = text[: limits.search_line_chars] + " [... line cut]"
            out.append(f"{printable(m.path)}:{m.line}: {text}")
        truncated = total > len(shown) or not found.complete
        if truncated:
            more = total - len(shown)
            out.append(
                f"[TRUNCATED] {more}{'' if found.complete else '+'} more matches not shown; "
                "narrow the pattern or the path glob"
            )
        return ToolResult.success("\n".join(out) + found.note, matches=total, files=shown_files, truncated=truncated,
                                  engine=found.engine)
