"""Confining paths to the workspace root: the controller's path check."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath


class PathDenied(Exception):
    pass


def normalize(rel: str) -> str:
    """The canonical workspace-relative spelling used in results, plans and the store."""
    return PurePosixPath(rel.replace("\\", "/")).as_posix().removeprefix("./") or "."


def resolve_in_root(root: Path, rel: str) -> Path:
    """Resolve `rel` under `root` (following `..` and symlinks) or raise PathDenied."""
    if "\x00" in rel:
        raise PathDenied("the path contains a NUL byte")
    if not rel.strip():
        raise PathDenied("the path is empty")
    if os.path.isabs(rel) or rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        raise PathDenied(f"absolute paths are not allowed ({rel!r}); use a path relative to the workspace root")
    real_root = root.resolve()
    target = (real_root / rel).resolve()
    if target != real_root and real_root not in target.parents:
        raise PathDenied(f"{rel!r} resolves outside the workspace root")
    return target


def relative(root: Path, target: Path) -> str:
    return target.relative_to(root.resolve()).as_posix() or "."
