"""The manifest's directory, packed to travel with the attempts to machines that do not share our disk.

On a cluster the oracle's scripts (and any file an arm's config names through
`{manifestDir}`) live next to the manifest on the submitting machine only. The
directory is packed once (a gzipped tar in memory, bounded in size), shipped
with the attempts, and unpacked once per worker machine into a directory named
by its digest, so every attempt on that machine sees the same, complete copy.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

MAX_BUNDLE_BYTES = 64 * 1024 * 1024  # packed; a manifest dir bigger than this is almost surely a mistake
MAX_BUNDLE_FILES = 10_000
#: Never shipped: version control, caches and virtualenvs are big and never what an oracle needs.
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache",
                          ".pytest_cache", ".ruff_cache", ".tox"})


class BundleError(Exception):
    pass


@dataclass(frozen=True)
class Bundle:
    digest: str  # sha256 of `data`; names the unpacked copy on each worker
    data: bytes
    files: int


def _normalised(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # Same files, same bytes: no owner names or times, so the digest only changes with the content.
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def pack(directory: Path, max_bytes: int = MAX_BUNDLE_BYTES, max_files: int = MAX_BUNDLE_FILES) -> Bundle:
    """Pack `directory` (regular files, dirs and relative symlinks inside it; see SKIPPED_DIRS)."""
    root = directory.resolve()
    if not root.is_dir():
        raise BundleError(f"{directory} is not a directory")
    entries: list[Path] = []
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        entries += [Path(current) / d for d in dirs] + [Path(current) / f for f in sorted(files)]
        if len(entries) > max_files:
            raise BundleError(f"the manifest's directory {root} holds more than {max_files} files and directories "
                              "to ship to the workers; put the manifest and its oracles in a directory of their own")
    too_big = BundleError(f"the manifest's directory {root} packs to more than {max_bytes} bytes "
                          f"({max_bytes / (1024 * 1024):g} MiB); put the manifest and its oracles in a directory "
                          "of their own")
    buffer = io.BytesIO()
    count = raw = 0
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        for path in entries:
            name = path.relative_to(root).as_posix()
            if path.is_symlink():
                target = os.readlink(path)
                if os.path.isabs(target) or not (path.parent / target).resolve().is_relative_to(root):
                    continue  # a link out of the directory would not mean the same thing on a worker
            elif not (path.is_file() or path.is_dir()):
                continue  # sockets, fifos, devices
            elif path.is_file():
                raw += path.stat().st_size
                if raw > 16 * max_bytes:  # stop early: even good compression will not bring this under
                    raise too_big
            tar.add(path, arcname=name, recursive=False, filter=_normalised)
            count += not path.is_dir()
    if buffer.tell() > max_bytes:
        raise too_big
    data = buffer.getvalue()
    return Bundle(digest=hashlib.sha256(data).hexdigest(), data=data, files=count)


def bundles_root() -> Path:
    return Path(tempfile.gettempdir()) / f"lsp-agent-eval-bundles-{os.getuid()}"


def unpack(bundle: Bundle, root: Path | None = None) -> Path:
    """The bundle's files in `root/<digest>`; unpacked once per machine, atomically (blocking)."""
    if hashlib.sha256(bundle.data).hexdigest() != bundle.digest:
        raise BundleError("the shipped manifest directory is damaged (digest mismatch)")
    base = root or bundles_root()
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    final = base / bundle.digest
    if final.is_dir():
        return final
    staging = Path(tempfile.mkdtemp(prefix=f".{bundle.digest[:12]}-", dir=base))
    try:
        with tarfile.open(fileobj=io.BytesIO(bundle.data), mode="r:gz") as tar:
            tar.extractall(staging, filter="data")  # refuses absolute paths, '..', links out, devices
        try:
            staging.rename(final)
        except OSError:
            if not final.is_dir():  # another attempt on this machine won the race: theirs is the same
                raise
    except (OSError, tarfile.TarError) as exc:
        raise BundleError(f"cannot unpack the manifest directory: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final
