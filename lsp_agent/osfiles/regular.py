"""Read a file only when it is a regular file, never blocking on what the workspace put there.

A repository (or a command the model ran) can turn any name into a FIFO, a socket or a device:
opening a FIFO for reading blocks until a writer appears, reading a device may never end. Every
file the harness reads on its own behalf goes through here: the type is checked before the open,
the open itself never blocks (O_NONBLOCK), and the descriptor's own type is checked again, so a
name swapped between the two checks is still refused.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"))


def kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


class NotRegularFile(OSError):
    """The name exists but is not a regular file; it was not read."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(errno.EINVAL, f"not a regular file ({kind})", os.fspath(path))
        self.kind = kind

    def __str__(self) -> str:
        return f"{os.fspath(self.filename)} is {self.kind}, not a regular file; it is never opened"


def open_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = True, dir_fd: int | None = None) -> int:
    """A read-only descriptor of a regular file (blocking mode restored); raises NotRegularFile for
    anything else and OSError as os.open does."""
    info = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegularFile(path, kind_of(info.st_mode))
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, kind_of(mode))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular_bytes(path: str | os.PathLike[str], limit: int | None = None, *,
                       follow_symlinks: bool = True) -> bytes:
    """The file's bytes (at most `limit` + 1 when a limit is given, so a caller sees it was larger)."""
    fd = open_regular(path, follow_symlinks=follow_symlinks)
    with os.fdopen(fd, "rb") as stream:
        return stream.read() if limit is None else stream.read(limit + 1)


def read_regular_text(path: str | os.PathLike[str], limit: int | None = None, *,
                      follow_symlinks: bool = True) -> str:
    return read_regular_bytes(path, limit, follow_symlinks=follow_symlinks).decode("utf-8", "replace")


def is_regular(path: Path) -> bool:
    """lstat-free check for callers that only choose whether to look at a name (symlinks followed)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
