"""Empty mount points for protected directories that do not exist yet, shared and counted.

A sandboxed command must not create `.git/` or `.lsp-agent/` in the workspace (a planted
`.git/config` runs a filter in the user's next git; a planted `.lsp-agent/config.toml` starts a
server in the next run). Bubblewrap can only bind over a path that exists, so for the duration of
the command the harness creates the missing directory itself, empty, and the sandbox binds it
read-only over itself: inside, it cannot be written, removed or renamed (a mount point is busy).
Creation is impossible while the command runs, not detected afterwards.

Commands run concurrently (several sessions in one server) share a mount point: it is counted,
and removed when the last one ends — only while empty (`rmdir`), so a directory someone else
filled meanwhile (the user's own `git init`) stays. A server killed mid-command leaves at worst an
empty directory behind.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

_lock = threading.RLock()  # re-entered when a failed `hold` releases what it took
#: mount point → (commands using it, the directories the harness created for it, outermost first)
_held: dict[Path, tuple[int, list[Path]]] = {}


def _make(path: Path) -> list[Path]:
    """Create `path` and its missing parents; the ones created, outermost first."""
    missing: list[Path] = []
    current = path
    while not os.path.lexists(current):
        missing.append(current)
        current = current.parent
    made: list[Path] = []
    try:
        for directory in reversed(missing):
            try:
                os.mkdir(directory, 0o755)
            except FileExistsError:
                continue  # made by someone else just now: not ours to remove
            made.append(directory)
    except OSError:
        for directory in reversed(made):
            os.rmdir(directory)
        raise
    return made


@dataclass
class MountPoints:
    """The mount points one command holds; `release` once it has ended."""

    paths: list[Path] = field(default_factory=list)

    def release(self) -> None:
        with _lock:
            for path in self.paths:
                count, made = _held.get(path, (0, []))
                if count > 1:
                    _held[path] = (count - 1, made)
                    continue
                _held.pop(path, None)
                for directory in reversed(made):
                    try:
                        os.rmdir(directory)  # only when still empty
                    except OSError:
                        break
        self.paths = []


def hold(paths: list[Path]) -> MountPoints:
    """Make each missing path an empty directory for as long as the returned lease is held. A path
    that exists because another command holds it is counted in; one that exists otherwise (the
    user's) is left alone and never removed.

    Raises OSError when a directory cannot be created in a workspace the server may write (the
    command would then be able to create it unprotected)."""
    lease = MountPoints()
    with _lock:
        try:
            for path in paths:
                if path in _held:
                    count, made = _held[path]
                    _held[path] = (count + 1, made)
                elif os.path.lexists(path):
                    continue  # exists already (someone else's): bound as it is, nothing to undo
                else:
                    try:
                        made = _make(path)
                    except OSError:
                        # A workspace the server cannot write into (permissions, a read-only file
                        # system): a command cannot create it either.
                        if not os.access(_existing_parent(path), os.W_OK):
                            continue
                        raise
                    _held[path] = (1, made)
                lease.paths.append(path)
        except BaseException:
            lease.release()
            raise
    return lease


def _existing_parent(path: Path) -> Path:
    current = path.parent
    while not os.path.lexists(current) and current != current.parent:
        current = current.parent
    return current


def held() -> dict[Path, int]:
    """How many commands hold each mount point now (tests, diagnostics)."""
    with _lock:
        return {path: count for path, (count, _) in _held.items()}
