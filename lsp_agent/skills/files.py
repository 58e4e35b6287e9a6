"""Safe file access under `.lsp-agent/skills/`: a promoted skill is read by every later session, so
no write may be redirected out of the workspace or over an existing file.

Every directory from the real workspace path down to the skill's own folder is checked with lstat
and opened relative to its parent with O_NOFOLLOW | O_DIRECTORY, so a symlink anywhere on the way
is refused — also one Git would never show (ignored, or hidden by .git/info/exclude) — and cannot
be swapped in between the check and the use. Files are opened with O_NOFOLLOW as well; new ones
with O_CREAT | O_EXCL (never overwriting), fsynced together with their directory.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lsp_agent.domain.skill_rules import Rule, RuleFailed
from lsp_agent.osfiles.regular import NotRegularFile, open_regular

SKILLS_PARTS = (".lsp-agent", "skills")
SKILLS_REL = "/".join(SKILLS_PARTS)
SKILL_FILE = "SKILL.md"
FILE_MODE = 0o644
DIR_MODE = 0o755
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def skill_rel(name: str) -> str:
    return f"{SKILLS_REL}/{name}/{SKILL_FILE}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@contextmanager
def directory(root: Path, parts: Sequence[str], *, create: bool = False) -> Iterator[int | None]:
    """A descriptor of root/parts…, every component checked (None: one is missing and not created)."""
    fd = os.open(os.path.realpath(root), _DIR_FLAGS)
    try:
        for depth, name in enumerate(parts):
            shown = "/".join(parts[: depth + 1])
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    fd = -1
                    yield None
                    return
                os.mkdir(name, DIR_MODE, dir_fd=fd)
                os.fsync(fd)  # the new directory entry survives a crash
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                raise RuleFailed(Rule.SYMLINK, f"{shown} is a symbolic link; skill files are only read and written "
                                               "under real directories of the workspace. Replace it with a directory")
            if not stat.S_ISDIR(info.st_mode):
                raise RuleFailed(Rule.NOT_A_DIRECTORY, f"{shown} is not a directory")
            try:
                child = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:  # swapped for a link or a file since the lstat
                raise RuleFailed(Rule.SYMLINK, f"{shown} changed while it was being opened ({exc.strerror})") from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        if fd >= 0:
            os.close(fd)


@dataclass(frozen=True)
class FileState:
    exists: bool
    regular: bool = False
    links: int = 0
    digest: str | None = None
    inode: int = 0


def read_regular(dir_fd: int, name: str, limit: int | None = None) -> tuple[FileState, bytes]:
    """The file's state and bytes (at most `limit`), never following a link."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return FileState(False), b""
    if not stat.S_ISREG(info.st_mode):
        return FileState(True, regular=False, links=info.st_nlink, inode=info.st_ino), b""
    try:
        fd = open_regular(name, follow_symlinks=False, dir_fd=dir_fd)  # swapped for a FIFO since: refused
    except NotRegularFile:
        return FileState(True, regular=False, links=info.st_nlink, inode=info.st_ino), b""
    try:
        opened = os.fstat(fd)
        chunks: list[bytes] = []
        size = 0
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 16):
            digest.update(chunk)
            if limit is None or size < limit:
                chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if limit is not None:
        data = data[:limit]
    return FileState(True, regular=True, links=opened.st_nlink, digest=digest.hexdigest(), inode=opened.st_ino), data


def write_exclusive(dir_fd: int, name: str, data: bytes, shown: str) -> None:
    """Create `name` with `data`; an existing file (or link) is never touched."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE,
                     dir_fd=dir_fd)
    except FileExistsError:
        raise RuleFailed(Rule.SKILL_EXISTS, f"{shown} already exists and is never overwritten") from None
    try:
        os.fchmod(fd, FILE_MODE)  # the same mode whatever the umask: a skill is meant to be shared
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except OSError:
        os.close(fd)
        os.unlink(name, dir_fd=dir_fd)  # our own partial file (O_EXCL made it ours): leave nothing half-written
        raise
    os.close(fd)
    os.fsync(dir_fd)
