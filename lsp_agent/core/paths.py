"""Confining paths to the workspace root: the controller's path check."""

from __future__ import annotations

import functools
import itertools
import os
import re
import stat
from pathlib import Path, PurePosixPath

from lsp_agent.osfiles.regular import NotRegularFile, read_regular_text

# C0 controls, DEL, C1 controls and the Unicode line/paragraph separators: in a path they forge
# lines in list_dir/search_code output (`evil\nresult.txt:1: FORGED`) or confuse terminals.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
#: Directories the model's file tools never write into (any depth, any letter case): git's
#: config and hooks run programs, and the harness's own config decides what runs.
PROTECTED_DIRS = (".git", ".lsp-agent")


class PathDenied(Exception):
    pass


def normalize(rel: str) -> str:
    """The canonical workspace-relative spelling used in results, plans and the store."""
    return PurePosixPath(rel.replace("\\", "/")).as_posix().removeprefix("./") or "."


def check_characters(rel: str) -> None:
    """Refuse NUL and control characters anywhere in a path the model gave."""
    if "\x00" in rel:
        raise PathDenied("the path contains a NUL byte")
    found = _CONTROL.search(rel)
    if found:
        raise PathDenied(f"the path contains the control character {found.group()!r}; file names with "
                         "control characters (newlines, tabs, escapes) are refused. Use a plain name")


def printable(rel: str) -> str:
    """A path as shown to the model: control characters escaped, so a file name cannot forge lines."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", rel)


def resolve_in_root(root: Path, rel: str) -> Path:
    """Resolve `rel` under `root` (following `..` and symlinks) or raise PathDenied.

    Never raises anything else: a vanished root, a symlink loop or an over-long name is a
    refusal of this path, not a crash of the caller."""
    check_characters(rel)
    if not rel.strip():
        raise PathDenied("the path is empty")
    if os.path.isabs(rel) or rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        raise PathDenied(f"absolute paths are not allowed ({rel!r}); use a path relative to the workspace root")
    try:
        real = real_root(root)
        target = _resolve_below(real, rel)
    except (OSError, RuntimeError, ValueError) as exc:
        raise PathDenied(f"{rel!r} cannot be resolved ({exc})") from exc
    if target != real and real not in target.parents:
        raise PathDenied(f"{rel!r} resolves outside the workspace root")
    return target


@functools.lru_cache(maxsize=64)
def real_root(root: Path) -> Path:
    """`root` with its links resolved, once (a walk of every component, each time, cost more than
    the rest of a path check). The boundary stays where the workspace was when first seen: a root
    later swapped for a link is resolved again by `_resolve_below`, and what it points to is outside."""
    return root.resolve()


def _resolve_below(real: Path, rel: str) -> Path:
    """`(real / rel).resolve()` for a `real` resolved earlier, cheaply in the common case: when `rel`
    has no `.`, `..` or empty part and neither the root nor any of its components is a link now (one
    lstat each, up to the first that does not exist, below which nothing is a link), it is
    `real / rel` as spelled."""
    parts = rel.split("/")
    if os.name != "posix" or any(part in ("", ".", "..") for part in parts):
        return (real / rel).resolve()
    for path in itertools.accumulate(parts, lambda path, part: f"{path}/{part}", initial=str(real)):
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return (real / rel).resolve()
        except (FileNotFoundError, NotADirectoryError):
            break
        except OSError:  # unreadable, over-long: the general case decides
            return (real / rel).resolve()
    return real.joinpath(*parts)


def protected_part(rel: str) -> str | None:
    """The protected directory (`.git`, `.lsp-agent`) this relative path is inside, if any."""
    for part in normalize(rel).split("/"):
        if part.lower() in PROTECTED_DIRS:
            return part
    return None


def linked_git_dir(real: Path) -> Path | None:
    """The directory a `.git` *file* at the workspace root names (`gitdir: PATH`, as worktrees and
    submodules have), when it lies inside the workspace: git reads its config and hooks from there."""
    entry = real / ".git"
    try:
        if not stat.S_ISREG(os.lstat(entry).st_mode):
            return None
        first = read_regular_text(entry, 4096, follow_symlinks=False).splitlines()[:1]
    except (OSError, NotRegularFile, ValueError):
        return None
    if not first or not first[0].startswith("gitdir:"):
        return None
    named = Path(first[0].removeprefix("gitdir:").strip())
    try:
        target = (named if named.is_absolute() else real / named).resolve()
    except (OSError, RuntimeError):
        return None
    return target if target != real and real in target.parents else None


def check_writable(root: Path, rel: str) -> None:
    """resolve_in_root, and refuse paths inside a protected directory (spelled, or via a symlink)."""
    target = resolve_in_root(root, rel)
    spelled = protected_part(rel)
    try:
        resolved = protected_part(target.relative_to(real_root(root)).as_posix())
    except (OSError, ValueError):
        resolved = None
    hit = spelled or resolved
    if hit is None:
        gitdir = linked_git_dir(real_root(root))
        if gitdir is not None and (target == gitdir or gitdir in target.parents):
            hit = gitdir.relative_to(real_root(root)).as_posix()
    if hit is not None:
        raise PathDenied(f"{rel!r} is inside {hit}/, which the agent never writes (git's config and hooks, "
                         "and lsp-agent's own settings, decide what programs run). Change files elsewhere; "
                         f"tell the user if {hit}/ itself needs a change")


def relative(root: Path, target: Path) -> str:
    return target.relative_to(root.resolve()).as_posix() or "."
