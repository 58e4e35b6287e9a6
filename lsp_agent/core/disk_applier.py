"""EditApplier over the file system, for headless runs (CLI, eval, tests).

A plan is checked completely before the first byte is written: every op's precondition is
evaluated against a simulated state (so a rename followed by an update of the new path works),
then each changed file is replaced atomically (temp file in the same directory, fsync,
os.replace). If a later write fails, the earlier ones are rolled back (best effort).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

from lsp_agent.core.edits import (
    ApplyFailure,
    ApplyResult,
    CreateFile,
    DeleteFile,
    EditPlan,
    RenameFile,
    UpdateFile,
    apply_text_edits,
)
from lsp_agent.core.paths import PathDenied, resolve_in_root

# Undecodable bytes survive a decode/encode round trip; the same convention as DiskDocuments.
_ERRORS = "surrogateescape"


class _Refused(Exception):
    def __init__(self, failure: ApplyFailure, message: str) -> None:
        super().__init__(message)
        self.failure = failure
        self.message = message


@dataclass
class _Entry:
    """A file as the plan sees it: the bytes on disk before the plan, and after each op so far."""

    target: Path
    original: bytes | None
    mode: int | None
    current: bytes | None = None
    current_mode: int | None = None
    order: int = 0


@dataclass
class _Done:
    entry: _Entry
    created_dirs: list[Path] = field(default_factory=list)


def _digest(data: bytes) -> str:
    # sha256 of the bytes equals core.edits.digest(text) for valid UTF-8 text.
    return hashlib.sha256(data).hexdigest()


class DiskApplier:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._lock = threading.Lock()  # one plan at a time per workspace

    async def apply(self, plan: EditPlan) -> ApplyResult:
        return await asyncio.to_thread(self.apply_sync, plan)

    async def flush(self, paths: list[str]) -> ApplyResult:
        # Headless edits go straight to disk, so disk already equals what the agent edited.
        return ApplyResult(ok=True)

    def apply_sync(self, plan: EditPlan) -> ApplyResult:
        with self._lock:
            try:
                entries = self._simulate(plan)
            except _Refused as exc:
                return ApplyResult(ok=False, failure=exc.failure, message=exc.message)
            try:
                self._write(entries)
            except _Refused as exc:
                return ApplyResult(ok=False, failure=exc.failure, message=exc.message)
            return ApplyResult(ok=True)

    # --- checking -------------------------------------------------------------------------------

    def _resolve(self, rel: str) -> Path:
        try:
            return resolve_in_root(self.root, rel)
        except PathDenied as exc:
            raise _Refused(ApplyFailure.REFUSED, str(exc)) from exc

    def _entry(self, entries: dict[str, _Entry], rel: str) -> _Entry:
        if rel not in entries:
            target = self._resolve(rel)
            if target.exists() and not target.is_file():
                raise _Refused(ApplyFailure.CONFLICT, f"{rel} exists and is not a regular file")
            data = target.read_bytes() if target.is_file() else None
            mode = stat.S_IMODE(target.stat().st_mode) if data is not None else None
            entries[rel] = _Entry(target, data, mode, data, mode, order=len(entries))
        return entries[rel]

    def _simulate(self, plan: EditPlan) -> dict[str, _Entry]:
        entries: dict[str, _Entry] = {}
        try:
            for op in plan.ops:
                entry = self._entry(entries, op.path)
                if isinstance(op, CreateFile):
                    if entry.current is not None:
                        raise _Refused(ApplyFailure.CONFLICT, f"{op.path} already exists")
                    entry.current, entry.current_mode = op.text.encode("utf-8", _ERRORS), None
                elif isinstance(op, RenameFile):
                    dest = self._entry(entries, op.new_path)
                    if entry.current is None:
                        raise _Refused(ApplyFailure.CONFLICT, f"cannot move {op.path}: it does not exist")
                    if dest.current is not None:
                        raise _Refused(ApplyFailure.CONFLICT, f"cannot move {op.path}: {op.new_path} exists")
                    dest.current, dest.current_mode = entry.current, entry.current_mode
                    entry.current, entry.current_mode = None, None
                else:
                    if entry.current is None:
                        raise _Refused(ApplyFailure.CONFLICT, f"{op.path} does not exist")
                    if _digest(entry.current) != op.base_digest:
                        raise _Refused(ApplyFailure.CONFLICT, f"{op.path} changed on disk since it was read")
                    if isinstance(op, DeleteFile):
                        entry.current, entry.current_mode = None, None
                        continue
                    assert isinstance(op, UpdateFile)
                    try:
                        text = apply_text_edits(entry.current.decode("utf-8", _ERRORS), op.edits)
                    except ValueError as exc:
                        raise _Refused(ApplyFailure.CONFLICT, f"the edits of {op.path} do not apply: {exc}") from exc
                    if text != op.new_text:
                        raise _Refused(ApplyFailure.CONFLICT,
                                       f"the edits of {op.path} do not produce the planned text; nothing written")
                    entry.current = text.encode("utf-8", _ERRORS)
        except OSError as exc:
            raise _Refused(ApplyFailure.IO_ERROR, f"reading files failed: {exc.strerror or exc}") from exc
        except UnicodeEncodeError as exc:
            raise _Refused(ApplyFailure.REFUSED, f"the text cannot be encoded as UTF-8: {exc.reason}") from exc
        return entries

    # --- writing --------------------------------------------------------------------------------

    def _write(self, entries: dict[str, _Entry]) -> None:
        changed = [e for e in sorted(entries.values(), key=lambda e: e.order)
                   if e.current != e.original or (e.current is not None and e.current_mode != e.mode)]
        # Writes before deletes: a failed write then leaves no file missing.
        changed.sort(key=lambda e: e.current is None)
        done: list[_Done] = []
        try:
            for entry in changed:
                rel = entry.target.relative_to(self.root).as_posix()
                now = entry.target.read_bytes() if entry.target.is_file() else None
                if now != entry.original:  # changed between the check and this write
                    raise _Refused(ApplyFailure.CONFLICT, f"{rel} changed on disk while the edit was applied")
                step = _Done(entry)
                done.append(step)
                if entry.current is None:
                    entry.target.unlink()
                else:
                    step.created_dirs = _make_parents(entry.target.parent, self.root)
                    _atomic_write(entry.target, entry.current, entry.current_mode)
        except _Refused:
            _rollback(done)
            raise
        except OSError as exc:
            _rollback(done)
            raise _Refused(ApplyFailure.IO_ERROR, f"writing failed ({exc.strerror or exc}); "
                                                  "earlier files of this edit were restored") from exc


def _make_parents(directory: Path, root: Path) -> list[Path]:
    missing: list[Path] = []
    while directory != root and not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for d in reversed(missing):
        d.mkdir()
    return missing  # deepest first, the order to remove them in


def _atomic_write(target: Path, data: bytes, mode: int | None) -> None:
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    # 0o666 before the umask, like any new file; an existing file keeps its own mode below.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # not supported everywhere; the file itself is already synced
    finally:
        os.close(fd)


def _rollback(done: list[_Done]) -> None:
    for step in reversed(done):
        entry = step.entry
        try:
            if entry.original is None:
                entry.target.unlink(missing_ok=True)
            else:
                _atomic_write(entry.target, entry.original, entry.mode)
            for d in step.created_dirs:
                d.rmdir()
        except OSError:
            continue  # best effort: restore as much as possible
