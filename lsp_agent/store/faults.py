"""What a failed store operation means, for a user: sqlite's and the OS's errors classified into the
port's `StoreUnavailable` reasons (read_only, full, corrupt, locked, missing, io).

Errors of the request itself (a constraint, a bug in a statement) are not store faults: they pass
through unchanged, so a classification never hides a bug.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from lsp_agent.core.storage import StoreReason, StoreUnavailable

R = StoreReason

# sqlite's primary result codes (the low byte of an extended code)
_SQLITE_PERM = 3
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_READONLY = 8
_SQLITE_IOERR = 10
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14
_SQLITE_NOTADB = 26

_BY_CODE = {_SQLITE_PERM: R.READ_ONLY, _SQLITE_READONLY: R.READ_ONLY, _SQLITE_BUSY: R.LOCKED,
            _SQLITE_LOCKED: R.LOCKED, _SQLITE_CORRUPT: R.CORRUPT, _SQLITE_NOTADB: R.CORRUPT, _SQLITE_FULL: R.FULL}
_BY_ERRNO = {errno.EROFS: R.READ_ONLY, errno.EACCES: R.READ_ONLY, errno.EPERM: R.READ_ONLY,
             errno.ENOSPC: R.FULL, errno.EDQUOT: R.FULL, errno.ENOENT: R.MISSING, errno.ENOTDIR: R.MISSING}

_ADVICE = {
    R.READ_ONLY: "the state directory cannot be written; make it writable (or point LSP_AGENT_STATE_DIR elsewhere)",
    R.FULL: "no space is left on the state directory's file system; free some and try again",
    R.CORRUPT: "the database file is damaged",
    R.LOCKED: "another process holds the database's write lock; try again when it lets go",
    R.MISSING: "the state directory or its database is missing (deleted, or its path names something else)",
    R.IO: "the file system failed",
}


def _sqlite_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _gone_or_full(path: Path) -> StoreReason | None:
    """What an unspecific I/O error (sqlite's IOERR, CANTOPEN) most likely was."""
    if not path.parent.is_dir():
        return R.MISSING
    try:
        space = os.statvfs(path.parent)
    except OSError:
        return None
    if space.f_bavail == 0:
        return R.FULL
    if not os.access(path.parent, os.W_OK) or (space.f_flag & os.ST_RDONLY):
        return R.READ_ONLY
    return None


def classify(exc: BaseException, path: Path) -> StoreUnavailable | None:
    """The store fault `exc` is, or None when it is not one (a constraint, a programming error)."""
    reason: StoreReason | None = None
    if isinstance(exc, sqlite3.Error):
        code = _sqlite_code(exc)
        if code in _BY_CODE:
            reason = _BY_CODE[code]
        elif code in (_SQLITE_IOERR, _SQLITE_CANTOPEN):
            reason = _gone_or_full(path) or R.IO
        else:
            return None
    elif isinstance(exc, OSError):
        reason = _BY_ERRNO.get(exc.errno or 0) or _gone_or_full(path) or R.IO
    else:
        return None
    return StoreUnavailable(reason, f"{_ADVICE[reason]} ({exc})", str(path))


@dataclass(frozen=True)
class FileIdentity:
    """The database file as it was opened. sqlite goes on writing to a file that was unlinked (the
    state directory deleted by a cleanup script): every such write would be acknowledged and lost.
    After a write, the path must still name the same file — one stat, cheap next to the write."""

    path: Path
    device: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> FileIdentity:
        info = path.stat()
        return cls(path, info.st_dev, info.st_ino)

    def check(self) -> None:
        try:
            info = os.stat(self.path)
        except OSError as exc:
            raise StoreUnavailable(R.MISSING, f"{_ADVICE[R.MISSING]}; this write and any after it are not kept "
                                   f"({exc.strerror}); restart to start a new store", str(self.path)) from None
        if (info.st_dev, info.st_ino) != (self.device, self.inode):
            raise StoreUnavailable(R.MISSING, f"{_ADVICE[R.MISSING]}; this write and any after it are not kept "
                                   "(the path now names another file); restart to use it", str(self.path))
