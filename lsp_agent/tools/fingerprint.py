"""The source fingerprint: Git revision, cleanliness and a digest of every source file.

Taken before verification runs, so the envelope says exactly which sources were verified. Inside
Git the listed files are those Git tracks or would track; outside it, a walk of the workspace.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from lsp_agent.osfiles.regular import open_regular
from lsp_agent.tools.internal import InternalStall, run_internal

_WALK_SKIP = frozenset({".git", "node_modules", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache",
                        ".pytest_cache"})


class FingerprintError(Exception):
    pass


class FingerprintStalled(FingerprintError):
    """git did not answer in time (or would have blocked on a special file): the caller may fall
    back to `walk_fingerprint`, which needs no program."""


def _file_token(path: Path) -> bytes:
    """What the digest records per path: content hash (and exec bit), link target, or absence."""
    try:
        info = path.lstat()
    except OSError:
        return b"missing"
    if stat.S_ISLNK(info.st_mode):
        try:
            return b"link:" + os.fsencode(os.readlink(path))
        except OSError:
            return b"link:?"
    if stat.S_ISDIR(info.st_mode):
        return b"dir"  # a submodule or nested repository listed by git
    if not stat.S_ISREG(info.st_mode):
        return b"special"
    digest = hashlib.sha256()
    try:
        # never blocks: a name swapped for a FIFO since the lstat is refused, not waited on
        with os.fdopen(open_regular(path, follow_symlinks=False), "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return b"unreadable"
    executable = b"x" if info.st_mode & stat.S_IXUSR else b"-"
    return b"file:" + executable + digest.hexdigest().encode()


def _digest(root: Path, revision: str | None, paths: list[str]) -> str:
    digest = hashlib.sha256(b"lsp-agent fingerprint v1\0")
    digest.update(b"revision:" + (revision or "").encode() + b"\0")
    for rel in sorted(set(paths)):
        digest.update(os.fsencode(rel) + b"\0" + _file_token(root / rel) + b"\0")
    return digest.hexdigest()


def _walk_files(root: Path) -> list[str]:
    found: list[str] = []
    for current, dirs, files in os.walk(root):
        base = Path(current)
        kept = []
        for d in dirs:
            if d in _WALK_SKIP:
                continue
            if (base / d).is_symlink():  # recorded as a link, never followed out of the root
                files.append(d)
            else:
                kept.append(d)
        dirs[:] = kept
        found.extend((base / f).relative_to(root).as_posix() for f in files)
    return found


async def _git(root: Path, timeout_s: float, *args: str) -> tuple[int | None, str, bool]:
    try:
        outcome = await run_internal(["git", *args], root, timeout_s)
    except InternalStall as exc:
        raise FingerprintStalled(str(exc)) from None
    return outcome.exit_code, outcome.output, outcome.output_truncated


async def walk_fingerprint(root: Path) -> str:
    """The digest of every file under root found by walking it (no git): outside Git, or when git
    cannot answer."""
    return await asyncio.to_thread(lambda: _digest(root, None, _walk_files(root)))


async def source_fingerprint(root: Path, timeout_s: float = 60.0,
                             exclude: Iterable[str] = ()) -> tuple[str | None, bool | None, str]:
    """(revision, clean, digest) of the workspace as it is now. Raises FingerprintError when the
    sources cannot be listed completely (a partial digest would be worse than none). `exclude`:
    untracked workspace paths left out of both the clean check and the digest."""
    skip = frozenset(exclude)
    root = await asyncio.to_thread(root.resolve)
    try:
        code, out, _ = await _git(root, timeout_s, "rev-parse", "--is-inside-work-tree")
    except FileNotFoundError:  # no git on this machine
        code, out = None, ""
    if code != 0 or out.strip() != "true":
        return None, None, await walk_fingerprint(root)
    code, out, _ = await _git(root, timeout_s, "rev-parse", "--verify", "--quiet", "HEAD")
    revision = out.strip() if code == 0 and out.strip() else None  # None before the first commit
    # Submodules are compared by their recorded commit only: a dirty check would run git inside each
    # one, under that submodule's own configuration.
    code, out, cut = await _git(root, timeout_s, "status", "--porcelain", "-z", "--untracked-files=all",
                                "--ignore-submodules=dirty")
    if code != 0 or cut:
        raise FingerprintError(f"git status failed (exit={code})")
    clean = all(entry[:2] == "??" and entry[3:] in skip for entry in _status_entries(out))
    code, out, cut = await _git(root, timeout_s, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if code != 0:
        raise FingerprintError(f"git ls-files failed (exit={code})")
    if cut:
        raise FingerprintError("the list of files is larger than the output capture limit")
    paths = [p for p in out.split("\0") if p and p not in skip]
    return revision, clean, await asyncio.to_thread(_digest, root, revision, paths)


def _status_entries(out: str) -> list[str]:
    """Entries of `git status --porcelain -z` (a rename or copy is followed by its original path)."""
    tokens = out.split("\0")
    entries: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if not token:
            continue
        entries.append(token)
        if token[:1] in ("R", "C"):
            index += 1
    return entries
