"""One workspace's checkpoints: recorded around every step that may write, listed, folded by retention.

The tree the agent last saw is kept in memory (path -> entry, with the stat facts the write
detection compares), so a checkpoint hashes only what changed since the previous one: from a
command's stat snapshot (the walk its write detection took anyway) or an edit tool's declared paths.
The first checkpoint of a workspace is its baseline: every file, once.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import logging
import os
import posixpath
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from lsp_agent.checkpoints.blobs import BlobStore
from lsp_agent.checkpoints.capture import Budget, capture, inside_without_links, tracked_name
from lsp_agent.checkpoints.chain import (
    Chain,
    Entry,
    Record,
    Tree,
    awaited,
    content_key,
    fold,
    matches,
    replay,
    stat_key,
)
from lsp_agent.checkpoints.restore import recover
from lsp_agent.core.checkpoint_port import StepRef
from lsp_agent.core.write_detect import IgnoredPaths, Snapshot, snapshot
from lsp_agent.settings.config import Checkpoints as CheckpointSettings

log = logging.getLogger(__name__)

#: more changed files than this in one checkpoint (a baseline, a large build) and their contents are
#: flushed together by one syncfs instead of an fsync each
_BATCH = 64


class CheckpointUnavailable(RuntimeError):
    """The workspace could not be recorded (too large to walk, or the store failed)."""


class CheckpointsClosed(CheckpointUnavailable):
    """Shutting down: a recording in progress stops at its next file and records nothing."""


class WorkspaceCheckpoints:
    def __init__(self, root: Path, base: Path, settings: Callable[[], CheckpointSettings],
                 ignored: IgnoredPaths | None = None, clock: Callable[[], float] = time.time) -> None:
        self.root = root.resolve()
        self.base = base
        self.settings = settings
        self.ignored = ignored
        self.clock = clock
        self.blobs = BlobStore(base / "objects")
        self.journal = base / "restore.journal"
        #: one recording or rewind at a time in this process
        self.lock = asyncio.Lock()
        #: paths a restore killed mid-way covered, finished now
        self.recovered: list[str] = []
        #: set at shutdown: reading files in a worker thread stops at the next file
        self._closing = threading.Event()
        self._background: set[asyncio.Task[None]] = set()
        self.chain = Chain(base / "chain.jsonl")
        self._load_tree()
        if not base.is_dir():
            return  # nothing recorded yet: nothing is created until the first checkpoint
        with self._file_lock():
            self.recovered = recover(self.blobs, self.journal)
            if self.recovered:
                self.chain = Chain(base / "chain.jsonl")
                self._load_tree()
        if self.recovered:
            self._record_sync(StepRef("", "", 0, "rewind"), sorted(self.recovered), None, "after")

    # --- state ------------------------------------------------------------------------------------
    def _load_tree(self) -> None:
        self.tree: Tree = replay(self.chain.records)
        self.stat = {p: stat_key(e) for p, e in self.tree.items()}
        #: the agent's edits an editor holds unsaved, by path (see `outside`)
        self.awaited = awaited(self.chain.records)
        self._chain_size = self._size()
        #: the bytes of file contents stored, as last counted (None: not yet; another process may
        #: have added some); with `blobs.added` the running total the byte cap is checked against
        self._stored: int | None = None

    def _size(self) -> int:
        try:
            return os.stat(self.chain.path).st_size
        except FileNotFoundError:
            return 0

    @contextmanager
    def _file_lock(self) -> Iterator[None]:
        """One writer across processes (the server and a CLI on the same workspace); another's
        appends are read before ours."""
        self._private_base()
        fd = os.open(self.base / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _private_base(self) -> None:
        """The store holds copies of every workspace file, a repository's `.env` and keys among them:
        readable by the user alone, whatever the umask or an older store's mode said."""
        self.base.mkdir(parents=True, exist_ok=True, mode=0o700)
        if stat.S_IMODE(self.base.stat().st_mode) != 0o700:
            os.chmod(self.base, 0o700)

    def _sync(self) -> None:
        if self._size() != self._chain_size:
            self.chain = Chain(self.chain.path)
            self._load_tree()

    # --- recording ----------------------------------------------------------------------------------
    async def prepare(self) -> None:
        async with self.lock:
            if not self.chain.records:
                await self.record_unlocked(StepRef("", "", 0, "baseline"), None, None, "before")
            if self._stored is None:  # counted here, off the steps' path, for the byte cap
                self._stored = await asyncio.to_thread(self.blobs.size)

    def start_baseline(self) -> None:
        if self.chain.records or self._closing.is_set() or any(not t.done() for t in self._background):
            return
        task = asyncio.get_running_loop().create_task(self.prepare())
        self._background.add(task)
        task.add_done_callback(self._prepared)

    def _prepared(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None \
                and not isinstance(task.exception(), CheckpointsClosed):
            log.warning("checkpoint baseline failed: %s", task.exception())

    async def close(self) -> None:
        """A worker thread cannot be cancelled: it is told to stop at its next file (nothing is
        appended after that), and the task is cancelled and awaited."""
        self._closing.set()
        tasks = [t for t in self._background if not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def before(self, step: StepRef, paths: list[str] | None, walk: Snapshot | None) -> None:
        await self.record(step, paths, walk, "before")

    async def after(self, step: StepRef, paths: list[str] | None, walk: Snapshot | None,
                    edited: dict[str, str] | None = None) -> None:
        async with self.lock:
            left = await asyncio.to_thread(self._keep_texts, edited or {})
            await self.record_unlocked(step, paths, walk, "after", left)

    def _keep_texts(self, texts: dict[str, str]) -> dict[str, str | None]:
        """The digests of the texts an edit left in editor buffers, each kept in the store (within
        the size limit) so that a rewind to this point puts back the buffer, not the older disk."""
        limit = self.settings().file_bytes
        self._private_base()
        out: dict[str, str | None] = {}
        for path, text in texts.items():
            data = text.encode("utf-8", "surrogateescape")
            out[path] = self.blobs.put(data) if len(data) <= limit else hashlib.sha256(data).hexdigest()
        return out

    async def record(self, step: StepRef, paths: list[str] | None, walk: Snapshot | None, phase: str,
                     expected: dict[str, str | None] | None = None) -> Record:
        async with self.lock:
            return await self.record_unlocked(step, paths, walk, phase, expected)

    async def record_unlocked(self, step: StepRef, paths: list[str] | None, walk: Snapshot | None,
                              phase: str, expected: dict[str, str | None] | None = None) -> Record:
        """`record` for a caller already holding `lock` (a rewind records around its restore).
        `expected`: what the step left in editor buffers (see `Record.expected`)."""
        changes = await self.changes(paths, walk)
        touched = sorted({posixpath.normpath(p) for p in paths or []}) if phase == "after" and walk is None else []
        own = {posixpath.normpath(p): d for p, d in (expected or {}).items()} if phase == "after" else {}
        return await asyncio.to_thread(self._append, step, changes, phase, touched, own)

    async def changes(self, paths: list[str] | None, walk: Snapshot | None) -> dict[str, Entry | None]:
        """What differs from the recorded tree now, content copied into the store, nothing appended."""
        if not self.chain.records and walk is None:
            walk = await asyncio.to_thread(snapshot, self.root)
        if walk is None and paths is None:
            raise CheckpointUnavailable("the workspace is too large to walk; no checkpoint was recorded")
        candidates = await asyncio.to_thread(self._candidates, paths, walk)
        ignored = await self._ignored([p for p in candidates if p not in self.tree])
        return await asyncio.to_thread(self._capture_all, candidates, ignored)

    def _record_sync(self, step: StepRef, paths: list[str] | None, walk: Snapshot | None, phase: str) -> Record:
        return self._append(step, self._capture_all(self._candidates(paths, walk), set()), phase)

    def _candidates(self, paths: list[str] | None, walk: Snapshot | None) -> list[str]:
        """The paths whose stat facts differ from the recorded tree (only these are hashed)."""
        with self._file_lock():
            self._sync()
        if walk is not None:
            return sorted({p for p, _ in walk.items() ^ self.stat.items()})
        out = []
        for raw in paths or []:
            path = posixpath.normpath(raw)
            if not tracked_name(path) or not inside_without_links(self.root, path):
                continue
            try:
                info = os.lstat(self.root / path)
                now: tuple[int, int, int, int] | None = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_mode)
            except (FileNotFoundError, NotADirectoryError):
                now = None
            if now != self.stat.get(path):
                out.append(path)
        return sorted(set(out))

    async def _ignored(self, paths: list[str]) -> set[str]:
        if not paths or self.ignored is None:
            return set()
        try:
            return await self.ignored(self.root, paths)
        except (OSError, TimeoutError):
            return set()  # cannot tell: record them (a copy too many, never a file missed)

    def _capture_all(self, candidates: list[str], ignored: set[str]) -> dict[str, Entry | None]:
        limits = self.settings()
        budget = Budget(limits.file_bytes, limits.checkpoint_bytes, batched=len(candidates) > _BATCH)
        changes: dict[str, Entry | None] = {}
        for path in candidates:
            if self._closing.is_set():
                raise CheckpointsClosed("shutting down: no checkpoint was recorded")
            old = self.tree.get(path)
            if path in ignored or (old is not None and old[0] == "ign"):
                entry = _ignored_entry(self.root, path)
            else:
                entry = capture(self.root, path, self.blobs, budget)
            if entry != old:
                changes[path] = entry
        if budget.batched and budget.written:
            self.blobs.sync()  # before any checkpoint line names them
        return changes

    def outside(self, changes: dict[str, Entry | None]) -> list[str]:
        """The paths of `changes` (found since the last checkpoint) someone other than the agent
        changed. Not one: a Git-ignored path, a file written again with the content it had (a save
        of an unchanged buffer), and a file now holding exactly what an agent's edit left in its
        editor buffer (the editor saved the agent's edit). Compared by content digest, never time."""
        out = []
        for path, entry in changes.items():
            if entry is not None and entry[0] == "ign":
                continue
            old = self.tree.get(path)
            if entry is not None and old is not None and content_key(entry) == content_key(old):
                continue
            if path in self.awaited and matches(entry, self.awaited[path]):
                continue
            out.append(path)
        return sorted(out)

    def _append(self, step: StepRef, changes: dict[str, Entry | None], phase: str,
                touched: list[str] | None = None, expected: dict[str, str | None] | None = None) -> Record:
        limits = self.settings()
        with self._file_lock():
            self._sync()
            first = not self.chain.records
            outside = self.outside(changes) if phase == "before" and not first else []
            record = Record(self.chain.next_seq(), step.session_id, step.message_id, step.step, step.tool,
                            "baseline" if first else phase, self.clock(), changes, outside,
                            touched=touched or [], expected=expected or {})
            self.chain.append(record)
            self.tree = replay([record], self.tree)
            self.awaited = awaited([record], self.awaited)
            for path, entry in changes.items():
                if entry is None:
                    self.stat.pop(path, None)
                else:
                    self.stat[path] = stat_key(entry)
            self._chain_size = self._size()
            self._retain(limits, step.session_id)
            self._cap_bytes(limits)
        return record

    def _retain(self, limits: CheckpointSettings, session: str) -> None:
        """Fold past the limits (with a margin, so the store is not swept at every step)."""
        records = self.chain.records
        mine = sum(1 for r in records if r.session == session)
        if len(records) <= limits.total + limits.total // 10 and mine <= limits.per_session + limits.per_session // 10:
            return
        self.chain.rewrite(fold(records, limits.per_session, limits.total))
        self._chain_size = self._size()
        self.blobs.sweep(self.chain.digests())
        self._stored = None

    def _cap_bytes(self, limits: CheckpointSettings) -> None:
        """Past `total_bytes`, fold the oldest tenth of the checkpoints and delete the contents no
        kept checkpoint names, until under it (or only the newest, the current files, is left)."""
        if self._stored is None:
            self._stored = self.blobs.size()
        if self._stored + self.blobs.added <= limits.total_bytes:
            return
        records = self.chain.records
        while True:
            self.blobs.sweep(self.chain.digests())
            self._stored = self.blobs.size()
            if self._stored <= limits.total_bytes or len(records) <= 1:
                break
            records = fold(records, limits.per_session, len(records) - max(1, len(records) // 10))
            self.chain.rewrite(records)
            self._chain_size = self._size()

    # --- reading ------------------------------------------------------------------------------------
    def records(self, session: str | None = None) -> list[Record]:
        with self._file_lock():
            self._sync()
        return [r for r in self.chain.records if session is None or r.session == session]


def _ignored_entry(root: Path, path: str) -> Entry | None:
    """A path Git ignores: its stat facts only, so it is not looked at again until it changes."""
    try:
        info = os.lstat(root / path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return ("ign", "", info.st_mode, info.st_size, info.st_mtime_ns, info.st_ino)
