"""Which workspace files a command changed: a stat snapshot before and after.

Any program the harness runs can write (python, npm scripts, a pytest plugin, git checkout), so
every write must count, headless as in the server, whether or not a watcher runs. The snapshot is
cheap — (size, mtime_ns, inode, mode) per file, no hashing — and bounded: the directories every
workspace ignores are skipped, and changed paths that Git ignores (build output, caches) are not
sources. A workspace too large to snapshot yields `UNKNOWN`: the write cannot be ruled out, so it
counts (a check is never kept standing on a guess).
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

#: Directories never walked: VCS data, dependency trees, caches, the harness's own store.
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".ruff_cache",
                       ".pytest_cache", ".tox", ".nox", ".eggs", ".lsp-agent"})
#: Files never counted: coverage data and bytecode the checks themselves leave behind.
SKIP_FILE = re.compile(r"^\.coverage(\..*)?$|\.py[co]$")
#: More files than this and the snapshot gives up (the changes are then unknown).
MAX_FILES = 200_000
#: Stands for "something may have changed, the paths are unknown".
UNKNOWN = "(unknown: workspace too large to snapshot)"

Snapshot = dict[str, tuple[int, int, int, int]]


def snapshot(root: Path) -> Snapshot | None:
    """Every file (and symlink) under root with its stat facts; None past MAX_FILES."""
    found: Snapshot = {}
    for current, dirs, files in os.walk(root):
        base = Path(current)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not (base / d).is_symlink()]
        for name in files:
            if SKIP_FILE.search(name):
                continue
            path = base / name
            try:
                info = path.lstat()
            except OSError:
                continue
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                continue
            found[path.relative_to(root).as_posix()] = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_mode)
            if len(found) > MAX_FILES:
                return None
    return found


def changed(before: Snapshot | None, after: Snapshot | None) -> list[str]:
    """Paths created, deleted or modified between the two snapshots, sorted."""
    if before is None or after is None:
        return [UNKNOWN]
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


#: Which of these workspace paths Git ignores. A port: the harness's own git runs sandboxed and
#: bounded in time by a layer above the core. Raises OSError (or TimeoutError) when it cannot tell.
IgnoredPaths = Callable[[Path, list[str]], Awaitable[set[str]]]


async def not_ignored(root: Path, paths: list[str], ignored: IgnoredPaths | None) -> list[str]:
    """Drop the paths Git ignores (without a way to ask, or when Git cannot answer, keep them all:
    a change counted as a source change at worst downgrades a check, never keeps one standing)."""
    listed = [p for p in paths if p != UNKNOWN]
    if not listed or ignored is None:
        return paths
    try:
        dropped = await ignored(root, listed)
    except (OSError, TimeoutError):
        return paths
    return [p for p in paths if p not in dropped]


class WriteDetector:
    """One command's window: `begin` before it runs (again after the harness's own saves), `end` after."""

    def __init__(self, root: Path, ignored: IgnoredPaths | None = None) -> None:
        self.root = root
        self.ignored = ignored
        self._before: Snapshot | None = None
        #: the last snapshot `end` took (the checkpoint after a command reuses it instead of walking again)
        self.after: Snapshot | None = None

    @property
    def before(self) -> Snapshot | None:
        """The snapshot `begin` took (the checkpoint before a command reuses it)."""
        return self._before

    async def begin(self) -> None:
        self.root = await asyncio.to_thread(self.root.resolve)
        self._before = await asyncio.to_thread(snapshot, self.root)

    async def end(self, created: bool = True) -> list[str]:
        """The changed paths. `created=False`: only files that existed before (modified or deleted) —
        for a check, whose new files are its artifacts, while a change to a file it checked means
        the sources it verified are no longer there."""
        after = self.after = await asyncio.to_thread(snapshot, self.root)
        paths = changed(self._before, after)
        if not created and self._before is not None and after is not None:
            paths = [p for p in paths if p in self._before]
        return await not_ignored(self.root, paths, self.ignored)
