"""list_dir: the files under a directory, as workspace-relative paths, bounded in depth and count.

Also home of the walk rules shared with search_code's Python fallback: the fixed skip list and
the git-ignored set (asked from git once per call).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from lsp_agent.core.paths import PathDenied, relative, resolve_in_root
from lsp_agent.core.tools import Access, RelPath, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.domain.history import ErrorKind
from lsp_agent.sandbox.git import GitConfigRefused
from lsp_agent.settings.config import Limits
from lsp_agent.tools.internal import InternalStall, run_internal

# Entries with these names (directories or files) are never listed or searched: they are tool
# state, dependencies or build output, and would drown the model in noise.
SKIP_NAMES: frozenset[str] = frozenset({
    ".git", "node_modules", "__pycache__", "dist", ".venv", "venv",
    ".mypy_cache", ".pytest_cache", ".ruff_cache",
})
# Safety bound on directory entries visited while counting what did not fit (a depth-10 walk of a
# huge tree must still finish quickly); past it the count is reported as "at least".
_MAX_VISITED = 100_000
_DEFAULTS = Limits()


@dataclass(frozen=True)
class IgnoreSet:
    """Untracked paths git ignores: files, and whole directories (kept with a trailing '/')."""

    files: frozenset[str] = field(default_factory=frozenset)
    dirs: frozenset[str] = field(default_factory=frozenset)
    #: why git could not say what it ignores (a FIFO .gitignore, a refused config): None when it did,
    #: or when there is nothing to ask (no git, not a repository)
    unknown: str | None = None

    def ignored(self, rel: str, is_dir: bool) -> bool:
        return (rel + "/") in self.dirs if is_dir else rel in self.files

    def note(self) -> str:
        return f"\nNOTE: git-ignored files are included: {self.unknown}." if self.unknown else ""


async def git_ignored(root: Path, rel: str, timeout_s: float) -> IgnoreSet:
    """Ask git which untracked paths under `rel` are ignored; empty outside a git repository.

    `--directory` collapses an ignored directory to one entry, so the answer stays small even
    with a large ignored tree (node_modules, build/). Tracked files are never reported. A git that
    cannot answer in `timeout_s` (or may not run) gives an empty set that says why.
    """
    argv = ["git", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory",
            "--", rel]
    try:
        outcome = await run_internal(argv, root, timeout_s, control=rel)
    except InternalStall as exc:
        return IgnoreSet(unknown=str(exc))
    except GitConfigRefused as exc:
        return IgnoreSet(unknown=f"git was not run ({exc})")
    except OSError:  # git is not installed
        return IgnoreSet()
    if outcome.exit_code != 0 or outcome.output_truncated:
        return IgnoreSet()
    files: set[str] = set()
    dirs: set[str] = set()
    for item in outcome.output.split("\0"):
        item = item.removeprefix("./")
        if not item or item in (".", "./"):
            continue  # never treat the listed directory itself as hidden
        (dirs if item.endswith("/") else files).add(item)
    return IgnoreSet(frozenset(files), frozenset(dirs))


async def git_ignored_paths(root: Path, paths: list[str], timeout_s: float = _DEFAULTS.internal_timeout_s) -> set[str]:
    """Which of these workspace paths git ignores (write detection's port). Raises OSError (or
    InternalStall, a TimeoutError) when git cannot answer; empty outside a repository."""
    if not paths or not await asyncio.to_thread(os.path.lexists, root / ".git"):
        return set()
    outcome = await run_internal(["git", "check-ignore", "--stdin", "-z"], root, timeout_s,
                                 stdin="\0".join(paths).encode() + b"\0")
    if outcome.exit_code not in (0, 1):
        raise OSError(f"git check-ignore failed (exit={outcome.exit_code})")
    return {p for p in outcome.output.split("\0") if p}


def _symlink_line(real_root: Path, entry: os.DirEntry[str], rel: str) -> str:
    target = Path(os.path.realpath(entry.path))
    if target != real_root and real_root not in target.parents:
        return f"{rel} -> (outside workspace)"
    shown = relative(real_root, target)
    if target.is_dir():
        shown += "/"
    elif not target.exists():
        shown += " (missing)"
    return f"{rel} -> {shown}"


@dataclass
class _Walk:
    real_root: Path
    ignore: IgnoreSet
    depth: int
    cap: int
    lines: list[str] = field(default_factory=list)
    total: int = 0
    visited: int = 0
    complete: bool = True

    def add(self, line: str) -> None:
        self.total += 1
        if len(self.lines) < self.cap:
            self.lines.append(line)

    def walk(self, directory: Path, prefix: str, level: int) -> None:
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            self.visited += 1
            if self.visited > _MAX_VISITED:
                self.complete = False
                return
            if entry.name in SKIP_NAMES:
                continue
            rel = prefix + entry.name
            if entry.is_symlink():
                # Never followed: a symlinked directory could leave the root or loop.
                if not self.ignore.ignored(rel, False):
                    self.add(_symlink_line(self.real_root, entry, rel))
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if self.ignore.ignored(rel, is_dir):
                continue
            if is_dir:
                self.add(rel + "/")
                if level < self.depth:
                    self.walk(Path(entry.path), rel + "/", level + 1)
            else:
                self.add(rel)


class ListDirArgs(StrictArgs):
    path: RelPath = Field(
        ".", description="Directory relative to the workspace root; '.' (the default) is the root."
    )
    depth: int | None = Field(
        None, ge=1, le=10,
        description="How many levels to descend: 1 lists only the direct entries. "
        f"Between 1 and 10; default {_DEFAULTS.list_depth}.",
    )


class ListDir(Tool[ListDirArgs]):
    name = "list_dir"
    access = Access.READ
    args_model = ListDirArgs
    summary = (
        "List the files and directories under a directory as workspace-relative paths, one per line, "
        "sorted by name, each directory followed by its contents; directories end with '/', symlinks "
        "show `name -> target` and are not followed. Skips .git, node_modules, __pycache__, dist, "
        ".venv, venv, tool caches and git-ignored files. Returns at most "
        f"{_DEFAULTS.list_entries} entries and says how many more there were."
    )
    use_when = "you need to see the layout of the project or find which files a directory holds."
    avoid_when = (
        "you look for a symbol or some text (use search_code), or you already know the file "
        "(use read_file)."
    )

    async def run(self, args: ListDirArgs, ctx: ToolContext) -> ToolResult:
        limits = ctx.settings.limits
        depth = args.depth if args.depth is not None else limits.list_depth
        try:
            target = resolve_in_root(ctx.root, args.path)
        except PathDenied as exc:
            return ToolResult.failure(ErrorKind.PATH_DENIED, f"ERROR: {exc}")
        real_root = ctx.root.resolve()
        rel = relative(real_root, target)
        if not target.exists():
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"ERROR: {rel} does not exist. List its parent directory, or use search_code to find it.",
            )
        if not target.is_dir():
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE, f"ERROR: {rel} is a file, not a directory. Use read_file to read it."
            )
        ignore = await git_ignored(real_root, rel, limits.internal_timeout_s)
        walk = _Walk(real_root, ignore, depth, limits.list_entries)
        prefix = "" if rel == "." else rel + "/"
        await asyncio.to_thread(walk.walk, target, prefix, 1)
        shown = f"{rel}/" if rel != "." else "./"
        if walk.total == 0:
            return ToolResult.success(
                f"OK: {shown} has no entries (after skipping build output, caches and ignored files)"
                + ignore.note(), entries=0, truncated=False,
            )
        more = walk.total - len(walk.lines)
        out = [f"OK: {shown} depth={depth}: {walk.total}{'' if walk.complete else '+'} entries", *walk.lines]
        truncated = more > 0 or not walk.complete
        if truncated:
            count = f"{more}" if walk.complete else f"at least {more}"
            out.append(f"[TRUNCATED] {count} more entries; list a subdirectory or use a smaller depth")
        return ToolResult.success("\n".join(out) + ignore.note(), entries=walk.total, truncated=truncated)
