"""EditApplier over the file system, for headless runs (CLI, eval, tests).

A plan is checked completely before the first file changes: every op's precondition is
evaluated against a simulated state (so a rename followed by an update of the new path works),
then each changed file is replaced atomically (temp file in the same directory, fsync,
os.replace). If a later write fails, the earlier ones are rolled back (best effort). One check of
a large plan — that its updates' edits make their new texts — runs beside the writing of the first
temp file (the fsync waits on the disk, the check on the CPU); every change waits for it.

Every read and write goes through directory file descriptors opened one component at a time
from the root with O_NOFOLLOW: no path resolved earlier is reused, so a directory swapped for a
symlink between the check and the write is refused instead of followed out of the workspace,
and temp files only ever exist in the target's own directory.
"""

from __future__ import annotations

import asyncio
import errno
import os
import posixpath
import re
import secrets
import stat
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lsp_agent.core.paths import PathDenied, check_writable, normalize
from lsp_agent.domain.edits import (
    ApplyFailure,
    ApplyResult,
    CreateFile,
    DeleteFile,
    EditPlan,
    RenameFile,
    UpdateFile,
    unmade,
    utf8_pieces,
)

#: A file's content: its bytes, or a text whose UTF-8 encoding they are (undecodable bytes kept as
#: surrogates, as DiskDocuments decodes them). An update's file is held as the plan's own text and
#: is compared, written and restored a piece at a time: a large file is never copied whole (each
#: multi-megabyte copy costs more in page faults than the work).
Content = bytes | str

# Lone surrogates that stand for no undecodable byte: such text has no UTF-8 encoding.
_UNENCODABLE = re.compile("[\ud800-\udc7f\udd00-\udfff]")

#: A plan whose updates' new texts reach this many characters has their edits checked in a helper
#: thread while its first file is synced; a smaller plan's are checked at once (measured: beside, a
#: 100-line edit pays 0.15 ms for the helper's wake-up, 10k lines save 0.4 ms, 100k lines 2.5 ms).
CHECK_BESIDE_CHARS = 1 << 17
_HELPER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lsp-agent-applier")


class _Refused(Exception):
    def __init__(self, failure: ApplyFailure, message: str) -> None:
        super().__init__(message)
        self.failure = failure
        self.message = message


@dataclass
class _Entry:
    """A file as the plan sees it: its content on disk before the plan, and after each op so far."""

    parts: tuple[str, ...]  # the workspace-relative path, one name per component
    original: Content | None
    mode: int | None
    current: Content | None = None
    current_mode: int | None = None
    order: int = 0


@dataclass
class _Done:
    entry: _Entry
    created_dirs: list[tuple[str, ...]] = field(default_factory=list)  # deepest first
    changed: bool = False  # the file was replaced or deleted (a rollback restores it)


class _EditsCheck:
    """That each update's edits, applied to its base text (what the file holds), make its new text:
    the check every applier makes before an update has any effect (`unmade`). Run at once for a
    small plan; a large plan's is started in the helper thread, and every change waits for it."""

    def __init__(self, updates: list[UpdateFile]) -> None:
        self._updates = updates
        self._result: Future[str | None] | None = None
        if sum(len(op.new_text) for op in updates) < CHECK_BESIDE_CHARS:
            _refuse_if(_first_unmade(updates))
            self._updates = []

    def start(self) -> None:
        if self._updates and self._result is None:
            self._result = _HELPER.submit(_first_unmade, self._updates)

    def wait(self) -> None:
        """Return once the check has passed; a failed check refuses the plan."""
        if self._updates:
            self.start()
            assert self._result is not None
            _refuse_if(self._result.result())
            self._updates = []


def _first_unmade(updates: list[UpdateFile]) -> str | None:
    return next((problem for op in updates if (problem := unmade(op.base_text, op)) is not None), None)


def _refuse_if(problem: str | None) -> None:
    if problem is not None:
        raise _Refused(ApplyFailure.CONFLICT, problem)


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
                entries, updates = self._simulate(plan)
                check = _EditsCheck(updates)
            except _Refused as exc:
                return ApplyResult(ok=False, failure=exc.failure, message=exc.message)
            try:
                self._write(entries, check)
            except _Refused as exc:
                return ApplyResult(ok=False, failure=exc.failure, message=exc.message)
            return ApplyResult(ok=True)

    # --- checking -------------------------------------------------------------------------------

    def _parts(self, rel: str) -> tuple[str, ...]:
        try:
            check_writable(self.root, rel)
        except PathDenied as exc:
            raise _Refused(ApplyFailure.REFUSED, str(exc)) from exc
        parts = tuple(posixpath.normpath(normalize(rel)).split("/"))
        if parts[0] in ("..", ".", "") or "" in parts:
            raise _Refused(ApplyFailure.REFUSED, f"{rel!r} is not a path inside the workspace")
        return parts

    def _entry(self, entries: dict[str, _Entry], rel: str, expected: str | None = None) -> _Entry:
        """The file at `rel` as the plan sees it; read, the first time, as `expected` when it holds it."""
        if rel not in entries:
            parts = self._parts(rel)
            with _root_fd(self.root) as root_fd:
                data, mode = _read(root_fd, parts, expected)
            entries[rel] = _Entry(parts, data, mode, data, mode, order=len(entries))
        return entries[rel]

    def _simulate(self, plan: EditPlan) -> tuple[dict[str, _Entry], list[UpdateFile]]:
        """The files as the plan leaves them, and its updates, whose edits are still to be checked."""
        entries: dict[str, _Entry] = {}
        updates: list[UpdateFile] = []
        try:
            for op in plan.ops:
                entry = self._entry(entries, op.path, op.base_text if isinstance(op, UpdateFile | DeleteFile) else None)
                if isinstance(op, CreateFile):
                    if entry.current is not None:
                        raise _Refused(ApplyFailure.CONFLICT, f"{op.path} already exists")
                    entry.current, entry.current_mode = _encodable(op.text), None
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
                    if not _holds(entry.current, op.base_text):
                        raise _Refused(ApplyFailure.CONFLICT, f"{op.path} changed on disk since it was read")
                    if isinstance(op, DeleteFile):
                        entry.current, entry.current_mode = None, None
                        continue
                    assert isinstance(op, UpdateFile)
                    # the file holds the base text: the edits are checked on it, not on a decoded copy
                    updates.append(op)
                    entry.current = _encodable(op.new_text)
        except OSError as exc:
            raise _Refused(ApplyFailure.IO_ERROR, f"reading files failed: {exc.strerror or exc}") from exc
        except UnicodeEncodeError as exc:
            raise _Refused(ApplyFailure.REFUSED, f"the text cannot be encoded as UTF-8: {exc.reason}") from exc
        return entries, updates

    # --- writing --------------------------------------------------------------------------------

    def _write(self, entries: dict[str, _Entry], check: _EditsCheck) -> None:
        changed = [e for e in sorted(entries.values(), key=lambda e: e.order)
                   if e.current != e.original or (e.current is not None and e.current_mode != e.mode)]
        # Writes before deletes: a failed write then leaves no file missing.
        changed.sort(key=lambda e: e.current is None)
        done: list[_Done] = []
        with _root_fd(self.root) as root_fd:
            try:
                for entry in changed:
                    step = _Done(entry)
                    done.append(step)
                    name = entry.parts[-1]
                    if entry.current is None:
                        check.wait()
                        old = self._recheck(root_fd, entry)
                        try:
                            with _dir_fd(root_fd, entry.parts[:-1]) as parent:
                                os.unlink(name, dir_fd=parent)
                        finally:
                            _close_later(old)
                    else:
                        step.created_dirs = _make_parents(root_fd, entry.parts[:-1], before_creating=check.wait)
                        with _dir_fd(root_fd, entry.parts[:-1]) as parent:
                            tmp = _stage(parent, name, entry.current, entry.current_mode, before_sync=check.start)
                            try:
                                check.wait()
                                old = self._recheck(root_fd, entry)
                                try:
                                    _commit(parent, tmp, name)
                                finally:
                                    _close_later(old)
                            except BaseException:
                                _discard(parent, tmp)
                                raise
                    step.changed = True
                check.wait()  # a plan that changes no byte still answers with its check
            except _Refused:
                _rollback(root_fd, done)
                raise
            except SymlinkRefused as exc:  # a directory swapped for a link since the check
                _rollback(root_fd, done)
                raise _Refused(ApplyFailure.REFUSED,
                               f"{_reason(exc)}; earlier files of this edit were restored") from exc
            except OSError as exc:
                _rollback(root_fd, done)
                raise _Refused(ApplyFailure.IO_ERROR, f"writing failed ({_reason(exc)}); "
                                                      "earlier files of this edit were restored") from exc

    @staticmethod
    def _recheck(root_fd: int, entry: _Entry) -> int | None:
        """Just before a file changes: it must still hold what the plan was checked against. The file
        comes back open (None: it does not exist), for `_close_later` once it is replaced or deleted."""
        still, fd = _open_unchanged(root_fd, entry.parts, entry.original)
        if not still:
            raise _Refused(ApplyFailure.CONFLICT, f"{'/'.join(entry.parts)} changed on disk while the edit was applied")
        return fd


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted in the workspace must not hang the writer.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class SymlinkRefused(OSError):
    """A component of the path is a symbolic link (checked at the moment of use)."""


def _reason(exc: OSError) -> str:
    if isinstance(exc, SymlinkRefused):
        return str(exc)
    return exc.strerror or str(exc)


@contextmanager
def _root_fd(root: Path) -> Iterator[int]:
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise _Refused(ApplyFailure.IO_ERROR, f"the workspace root cannot be opened ({exc.strerror or exc})") from exc
    try:
        yield fd
    finally:
        os.close(fd)


def _open_component(parent: int, name: str, flags: int) -> int:
    try:
        return os.open(name, flags, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            try:
                is_link = stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
            except OSError:
                is_link = False
            if is_link:
                raise SymlinkRefused(errno.ELOOP, f"{name} is a symbolic link; edits never go through "
                                                  "symlinks (edit the file it points to by its own path)") from exc
        raise


@contextmanager
def _dir_fd(root_fd: int, parts: tuple[str, ...]) -> Iterator[int]:
    """The directory `parts` below the root, opened component by component without following links."""
    fd = os.dup(root_fd)
    try:
        for name in parts:
            child = _open_component(fd, name, _DIR_FLAGS)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _open_regular(root_fd: int, parts: tuple[str, ...]) -> tuple[int, os.stat_result] | None:
    """A blocking descriptor (the caller closes it) and the status of the regular file at `parts`,
    or None when it does not exist."""
    rel = "/".join(parts)
    try:
        with _dir_fd(root_fd, parts[:-1]) as parent:
            fd = _open_component(parent, parts[-1], _FILE_FLAGS)
    except SymlinkRefused as exc:
        raise _Refused(ApplyFailure.REFUSED, f"{rel}: {exc}") from exc
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return None  # a missing directory on the way: the file does not exist
        raise _Refused(ApplyFailure.IO_ERROR, f"reading {rel} failed: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        regular = stat.S_ISREG(info.st_mode)
        if regular:
            os.set_blocking(fd, True)
    except OSError as exc:
        os.close(fd)
        raise _Refused(ApplyFailure.IO_ERROR, f"reading {rel} failed: {exc.strerror or exc}") from exc
    if not regular:
        os.close(fd)
        raise _Refused(ApplyFailure.CONFLICT, f"{rel} exists and is not a regular file")
    return fd, info


def _read(root_fd: int, parts: tuple[str, ...], expected: str | None = None) -> tuple[Content | None, int | None]:
    """(content, mode) of the regular file at `parts`, or (None, None) when it does not exist: the
    text `expected` itself when the file holds it (compared a piece at a time), else its bytes."""
    if (opened := _open_regular(root_fd, parts)) is None:
        return None, None
    fd, info = opened
    try:
        mode = stat.S_IMODE(info.st_mode)
        if expected is not None:
            if _reads_as(fd, info, expected):
                return expected, mode
            os.lseek(fd, 0, os.SEEK_SET)  # it differs (the op is refused): read as any other file
        # One read of the size fstat gave, plus one byte: a regular file reads short only at its
        # end, so a shorter result is the whole file; a full one means it grew, and the rest is
        # read too. (Joining 1 MiB chunks copied a large file a second time.)
        data = os.read(fd, info.st_size + 1)
        if len(data) > info.st_size:
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            data = b"".join(chunks)
        return data, mode
    except OSError as exc:
        raise _Refused(ApplyFailure.IO_ERROR, f"reading {'/'.join(parts)} failed: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


#: files are compared and written in pieces of this many bytes (of a text: code points)
IO_PIECE = 1 << 16


def _pieces(content: Content) -> Iterator[bytes]:
    if isinstance(content, bytes):
        for at in range(0, len(content), IO_PIECE):
            yield content[at:at + IO_PIECE]
    else:
        yield from utf8_pieces(content, IO_PIECE)


def _reads_as(fd: int, info: os.stat_result, content: Content) -> bool:
    """Whether the rest of the open file `fd` is `content`, read a piece at a time (a regular file
    reads short only at its end)."""
    if (isinstance(content, bytes) or content.isascii()) and len(content) != info.st_size:
        return False
    return all(os.read(fd, len(piece)) == piece for piece in _pieces(content)) and not os.read(fd, 1)


def _holds(content: Content, text: str) -> bool:
    """Whether `content` is `text` (bytes: its UTF-8 encoding), compared a piece at a time."""
    if isinstance(content, str):
        return content == text
    if text.isascii() and len(text) != len(content):
        return False
    at = 0
    for piece in utf8_pieces(text):
        if not content.startswith(piece, at):
            return False
        at += len(piece)
    return at == len(content)


def _encodable(text: str) -> str:
    """`text`, checked before anything is written to have a UTF-8 encoding (it is encoded as it is
    written); raises UnicodeEncodeError otherwise."""
    if not text.isascii() and _UNENCODABLE.search(text):
        text.encode("utf-8", "surrogateescape")  # raises, with the reason
    return text


def _open_unchanged(root_fd: int, parts: tuple[str, ...], original: Content | None) -> tuple[bool, int | None]:
    """Whether the file at `parts` still holds `original` (None: still does not exist), and when it
    does and exists, the file open (the caller closes it)."""
    if (opened := _open_regular(root_fd, parts)) is None:
        return original is None, None
    fd, info = opened
    try:
        if original is not None and _reads_as(fd, info, original):
            return True, fd
    except OSError as exc:
        os.close(fd)
        raise _Refused(ApplyFailure.IO_ERROR, f"reading {'/'.join(parts)} failed: {exc.strerror or exc}") from exc
    os.close(fd)
    return False, None


def _close_later(fd: int | None) -> None:
    """Close `fd` in the helper thread: the last close of a replaced or deleted file frees its cached
    pages (≈ 1 ms for 2.9 MB), work no caller needs to wait for."""
    if fd is not None:
        try:
            _HELPER.submit(os.close, fd)
        except RuntimeError:  # the interpreter is shutting down
            os.close(fd)


def _make_parents(root_fd: int, parts: tuple[str, ...],
                  before_creating: Callable[[], None] = lambda: None) -> list[tuple[str, ...]]:
    """Create the missing directories of `parts` (calling `before_creating` before the first one);
    the ones created, deepest first."""
    created: list[tuple[str, ...]] = []
    fd = os.dup(root_fd)
    try:
        for depth, name in enumerate(parts, start=1):
            try:
                child = _open_component(fd, name, _DIR_FLAGS)
            except FileNotFoundError:
                if not created:
                    before_creating()
                os.mkdir(name, 0o777, dir_fd=fd)
                created.append(parts[:depth])
                child = _open_component(fd, name, _DIR_FLAGS)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    return list(reversed(created))


def _atomic_write(parent: int, name: str, data: Content, mode: int | None) -> None:
    tmp = _stage(parent, name, data, mode)
    try:
        _commit(parent, tmp, name)
    except BaseException:
        _discard(parent, tmp)
        raise


def _stage(parent: int, name: str, data: Content, mode: int | None,
           before_sync: Callable[[], None] = lambda: None) -> str:
    """A temp file beside `name` holding `data`, synced (`before_sync` is called just before the
    fsync); its name. Nothing else changes. Where the system allows, the file has no name until it
    is synced: a process killed while writing it leaves nothing behind."""
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    fd, named = _new_file(parent, tmp)
    try:
        try:
            for piece in (data,) if isinstance(data, bytes) else utf8_pieces(data, IO_PIECE):
                view = memoryview(piece)
                while view:
                    view = view[os.write(fd, view):]
            if mode is not None:  # before the fsync, so the mode is as durable as the bytes
                os.fchmod(fd, mode)
            before_sync()
            os.fsync(fd)
            if not named:
                os.link(f"/proc/self/fd/{fd}", tmp, dst_dir_fd=parent)
                named = True
        finally:
            os.close(fd)
    except BaseException:
        if named:
            _discard(parent, tmp)
        raise
    return tmp


#: Linux can create a file with no name in a directory (O_TMPFILE) and link it in later by its
#: descriptor's /proc entry.
_UNNAMED = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")


def _new_file(parent: int, tmp: str) -> tuple[int, bool]:
    """A new file open for writing in `parent`, 0o666 before the umask like any new file (an existing
    file's own mode is set on it later), and whether it is named `tmp` yet: not when the system and
    the file system allow a file without a name."""
    if _UNNAMED:
        try:
            return os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666, dir_fd=parent), False
        except OSError as exc:  # a file system without it (older kernels say EISDIR)
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(tmp, flags, 0o666, dir_fd=parent), True


def _commit(parent: int, tmp: str, name: str) -> None:
    """The staged `tmp` replaces `name` in one step, and the directory is synced."""
    os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
    try:
        os.fsync(parent)
    except OSError:
        pass  # not supported everywhere; the file itself is already synced


def _discard(parent: int, tmp: str) -> None:
    try:
        os.unlink(tmp, dir_fd=parent)
    except OSError:
        pass


def _rollback(root_fd: int, done: list[_Done]) -> None:
    for step in reversed(done):
        entry = step.entry
        try:
            if step.changed:
                with _dir_fd(root_fd, entry.parts[:-1]) as parent:
                    if entry.original is None:
                        try:
                            os.unlink(entry.parts[-1], dir_fd=parent)
                        except FileNotFoundError:
                            pass
                    else:
                        _atomic_write(parent, entry.parts[-1], entry.original, entry.mode)
            for created in step.created_dirs:
                with _dir_fd(root_fd, created[:-1]) as parent:
                    os.rmdir(created[-1], dir_fd=parent)
        except OSError:
            continue  # best effort: restore as much as possible
