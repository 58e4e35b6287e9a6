"""File contents by their sha256, zlib-compressed, one file per content under the state directory.

Our own store rather than a shadow git repository: nothing of the workspace's git configuration,
attributes (filters) or hooks can take part, and only the files the write detection saw change are
read and hashed (bench/checkpoints.py measures the difference).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Iterable
from pathlib import Path


def _syncfs(fd: int) -> bool:
    """syncfs(2) through libc (Linux); False where it is not there or fails."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.syncfs(fd) == 0)
    except (OSError, AttributeError):
        return False


class BlobMissing(LookupError):
    """A checkpoint names content the store no longer has (or has damaged)."""


class BlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        #: compressed bytes this process has written since `size` last counted them
        self.added = 0

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes, durable: bool = True) -> str:
        """Store `data`; `durable=False` leaves the flush to one `sync()` after a batch (a baseline
        writes thousands: one fsync each would cost twice the hashing)."""
        digest = hashlib.sha256(data).hexdigest()
        path = self._path(digest)
        if path.exists():
            return digest
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        packed = zlib.compress(data, 1)
        with open(tmp, "wb") as out:
            out.write(packed)
            out.flush()
            if durable:
                os.fsync(out.fileno())
        os.replace(tmp, path)
        self.added += len(packed)
        return digest

    def has(self, digest: str) -> bool:
        return self._path(digest).is_file()

    def sync(self) -> None:
        """Make every content written without `durable` durable before a checkpoint names it: one
        syncfs(2) of the store's file system (each file's fsync where syncfs is missing)."""
        if not self.root.is_dir():
            return
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if _syncfs(fd):
                return
        finally:
            os.close(fd)
        for sub in self.root.iterdir():
            for item in sub.iterdir() if sub.is_dir() else ():
                with open(item, "rb") as stored:
                    os.fsync(stored.fileno())

    def get(self, digest: str) -> bytes:
        try:
            data = zlib.decompress(self._path(digest).read_bytes())
        except (OSError, zlib.error) as exc:
            raise BlobMissing(f"checkpoint content {digest[:12]} is missing or damaged ({exc})") from exc
        if hashlib.sha256(data).hexdigest() != digest:
            raise BlobMissing(f"checkpoint content {digest[:12]} is damaged (hash differs)")
        return data

    def sweep(self, keep: Iterable[str]) -> int:
        """Delete every content not in `keep`; the bytes freed."""
        wanted = set(keep)
        freed = 0
        if not self.root.is_dir():
            return 0
        for sub in self.root.iterdir():
            if not sub.is_dir():
                continue
            for item in sub.iterdir():
                if sub.name + item.name not in wanted:
                    freed += item.stat().st_size
                    item.unlink()
        return freed

    def size(self) -> int:
        """The bytes stored, counted on disk (and `added` starts again from zero)."""
        self.added = 0
        if not self.root.is_dir():
            return 0
        return sum(item.stat().st_size for sub in self.root.iterdir() if sub.is_dir() for item in sub.iterdir())
