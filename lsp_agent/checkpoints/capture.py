"""Reading the workspace for a checkpoint: one path at a time, by lstat, never following a link.

A symlink is recorded as its target text; a FIFO, socket or device is never opened (it counts as
absent, as in the write detection's snapshot); a file past the size limits is listed, not copied.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from lsp_agent.checkpoints.blobs import BlobStore
from lsp_agent.checkpoints.chain import Entry
from lsp_agent.core.write_detect import SKIP_DIRS, SKIP_FILE
from lsp_agent.osfiles.regular import NotRegularFile, read_regular_bytes


def tracked_name(path: str) -> bool:
    """Whether a workspace-relative path is one the write detection's walk would see."""
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return False
    return not any(p in SKIP_DIRS for p in parts[:-1]) and not SKIP_FILE.search(parts[-1])


def inside_without_links(root: Path, path: str) -> bool:
    """No directory on the way to `path` is a symlink (the walk never descends through one, and a
    restore must never write through one to a place outside the workspace)."""
    current = root
    for part in path.split("/")[:-1]:
        current = current / part
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return False
        except FileNotFoundError:
            return True  # the rest does not exist yet: nothing to follow
    return True


@dataclass
class Budget:
    file_bytes: int
    checkpoint_bytes: int
    used: int = 0
    #: contents are flushed once for the whole checkpoint (`BlobStore.sync`) instead of one by one
    batched: bool = False
    written: int = 0


def capture(root: Path, path: str, blobs: BlobStore, budget: Budget) -> Entry | None:
    """The entry of one path now (None: absent, or not a file or link)."""
    full = root / path
    try:
        info = os.lstat(full)
    except (FileNotFoundError, NotADirectoryError):
        return None
    mode = info.st_mode
    facts = (mode, info.st_size, info.st_mtime_ns, info.st_ino)
    if stat.S_ISLNK(mode):
        return ("l", os.readlink(full), *facts)
    if not stat.S_ISREG(mode):
        return None
    if info.st_size > budget.file_bytes or budget.used + info.st_size > budget.checkpoint_bytes:
        return ("big", "", *facts)
    try:
        data = read_regular_bytes(full, budget.file_bytes, follow_symlinks=False)
    except NotRegularFile:
        return None  # swapped for a FIFO or the like since the lstat: never opened
    except (FileNotFoundError, NotADirectoryError):
        return None
    if len(data) > budget.file_bytes:
        return ("big", "", *facts)
    budget.used += len(data)
    budget.written += 1
    return ("f", blobs.put(data, durable=not budget.batched), *facts)
