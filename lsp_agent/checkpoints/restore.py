"""Putting files back, crash-safe: a journal on disk before the first file changes, each file
replaced whole (a temp file beside it, fsynced, renamed over it), the journal removed at the end.

A process killed in the middle leaves every file old or new, never mixed, and the journal: the next
start (`recover`) applies it again from the beginning — each operation is idempotent and its content
is in the store — so the restore is finished, never left half done.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lsp_agent.checkpoints.blobs import BlobStore
from lsp_agent.checkpoints.capture import inside_without_links, tracked_name

#: The temp name a restored file is written under first, beside its final name.
TEMP_SUFFIX = ".lsp-agent-restore"


@dataclass(frozen=True)
class Op:
    path: str
    #: "f": write content `ref`; "l": a symlink to `ref`; "del": remove
    kind: str
    ref: str = ""
    mode: int = 0o644


class UnsafePath(ValueError):
    """A path the restore will not touch: outside the workspace's own tree or through a symlink."""


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp(target: Path) -> Path:
    return target.with_name(f".{target.name}{TEMP_SUFFIX}")


def apply_one(root: Path, blobs: BlobStore, op: Op) -> None:
    if not tracked_name(op.path) or not inside_without_links(root, op.path):
        raise UnsafePath(f"{op.path}: not restored (outside the workspace's own tree, or under a symlink)")
    target = root / op.path
    if op.kind == "del":
        try:
            if not os.path.isdir(target) or os.path.islink(target):
                os.unlink(target)
        except FileNotFoundError:
            return
        _fsync_dir(target.parent)
        _drop_emptied_dirs(root, target.parent)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if not inside_without_links(root, op.path):  # a directory swapped for a link meanwhile
        raise UnsafePath(f"{op.path}: not restored (a directory on its way became a symlink)")
    temp = _temp(target)
    try:
        os.unlink(temp)
    except FileNotFoundError:
        pass
    if op.kind == "l":
        os.symlink(op.ref, temp)
    else:
        data = blobs.get(op.ref)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, op.mode & 0o7777)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, op.mode & 0o7777)
            os.fsync(fd)
        finally:
            os.close(fd)
    os.replace(temp, target)
    _fsync_dir(target.parent)


def _drop_emptied_dirs(root: Path, directory: Path) -> None:
    """Directories a deletion left empty go too (a command's new directory is part of its effects;
    a later file of the restore recreates what it needs)."""
    while directory != root and root in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return  # not empty (or gone): stop here
        directory = directory.parent


def apply(root: Path, blobs: BlobStore, ops: list[Op], journal: Path,
          on_op: Callable[[int], None] | None = None) -> dict[str, str]:
    """Every op, journalled; the paths that failed with why (the others are done)."""
    journal.parent.mkdir(parents=True, exist_ok=True)
    tmp = journal.with_name(journal.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump({"root": str(root), "ops": [[o.path, o.kind, o.ref, o.mode] for o in ops]}, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, journal)
    _fsync_dir(journal.parent)
    failed: dict[str, str] = {}
    for index, op in enumerate(ops):
        try:
            apply_one(root, blobs, op)
        except (OSError, ValueError, LookupError) as exc:
            failed[op.path] = str(exc)
        if on_op is not None:
            on_op(index)
    journal.unlink()
    _fsync_dir(journal.parent)
    return failed


def pending(journal: Path) -> tuple[Path, list[Op]] | None:
    try:
        raw = json.loads(journal.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except ValueError:
        journal.unlink()  # torn before it was renamed into place: no file was touched yet
        return None
    return Path(raw["root"]), [Op(str(p), str(k), str(r), int(m)) for p, k, r, m in raw["ops"]]


def recover(blobs: BlobStore, journal: Path) -> list[str]:
    """Finish a restore a killed process left (the paths it covered); [] when there was none."""
    found = pending(journal)
    if found is None:
        return []
    root, ops = found
    apply(root, blobs, ops, journal)
    return [op.path for op in ops]
