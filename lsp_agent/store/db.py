"""The local store: sqlite in WAL mode. Sessions, messages and parts are written
as they are created, so a crash loses at most the step in flight.

Writes are single small statements (well under a millisecond in WAL mode), so
they run inline on the event loop. What makes that safe when the disk misbehaves:
- another process's write lock is waited for at most `busy_ms` (a setting, default 1 s), then the
  write is refused as `store_unavailable` (locked) and nothing of it is acknowledged. Readers are
  never blocked by a writer in WAL mode, so `agent/status` answers while the lock is held. Moving
  every write to a store thread instead would turn each synchronous caller (the append-before-
  remember ordering of the history, the guarded queue writes) into an awaited one for a wait that
  the bound already caps;
- every sqlite or OS failure of the file becomes a classified `StoreUnavailable` (store/faults.py);
- after each write the path must still name the file written (a deleted state directory is found
  before the write is acknowledged, not after the row is lost);
- a file that is not a database is moved aside (`store.db.corrupt-<n>`) and the user told, never
  opened over or recreated in place.
"""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ConfigDict, TypeAdapter

from lsp_agent.core.queue_model import QueueItem
from lsp_agent.core.storage import (
    CorrectionExists,
    PendingCorrection,
    SessionRecord,
    StaleGeneration,
    StoreReason,
    StoreUnavailable,
)
from lsp_agent.core.storage import Store as StorePort
from lsp_agent.domain.history import Message, Part, Role
from lsp_agent.store.faults import FileIdentity, classify
from lsp_agent.store.lease import LeaseTables
from lsp_agent.store.migrations import migrate
from lsp_agent.store.queue import QueueTables, claim_for_send, requeue_steered, stamp_applied
from lsp_agent.store.skills import SkillTables

# Only keys go through pydantic-core's JSON string cache: with values cached too (the default), it
# kept up to 16,384 part and call IDs from earlier loads alive, scattered over the allocator's arenas,
# so a long-lived server could not give back the memory of a large history after dropping it.
_PART = TypeAdapter[Part](Part, config=ConfigDict(cache_strings="keys"))


#: the connection's page cache in KiB (sqlite's default is 2,000)
CACHE_KIB = 128
#: how long a write waits for another process's lock by default (limits.store_busy_ms)
BUSY_MS = 1_000

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _session(row: sqlite3.Row) -> SessionRecord:
    return SessionRecord(id=row["id"], workspace=row["workspace"], model=row["model"], title=row["title"],
                         parent_id=row["parent_id"], created_at=row["created_at"], updated_at=row["updated_at"],
                         active_generation=row["active_generation"])


def _correction(row: sqlite3.Row) -> PendingCorrection:
    return PendingCorrection(session_id=row["session_id"], client_id=row["client_id"], generation=row["generation"],
                             text=row["text"], queue_item=row["queue_item"], owner=row["owner"],
                             created_at=row["created_at"])


class Store(QueueTables, SkillTables, LeaseTables):
    """The sqlite implementation of the core's storage port (`lsp_agent.core.storage.Store`) and of
    the skills' (`lsp_agent.skills.port.SkillStore`, met by shape: the store never imports skills)."""

    def __init__(self, path: Path, busy_ms: int = BUSY_MS) -> None:
        self.path = path
        #: what the user must be told about the opening (a damaged file moved aside)
        self.notices: list[str] = []
        self.moved_aside: Path | None = None
        damaged = _identity_of(path)
        try:
            self.db = _open(path, busy_ms)
        except StoreUnavailable as exc:
            if exc.reason is not StoreReason.CORRUPT:
                raise
            # Moved only while the path still names the file found damaged: when another process moved
            # it first, the store there now is that process's new one, and it is used, never moved.
            if _identity_of(path) == damaged:
                self.moved_aside = _move_aside(path, exc)
                self.notices.append(f"lsp-agent: the session store {path} was damaged ({exc.detail}); it was "
                                    f"moved aside to {self.moved_aside} and a new, empty store was started")
                log.warning("%s", self.notices[-1])
            self.db = _open(path, busy_ms)
        try:
            self.identity = FileIdentity.of(path)
        except OSError as exc:
            self.db.close()
            raise _fault(exc, path) from exc

    def close(self) -> None:
        self.db.close()

    def check_written(self) -> None:
        """The file written to is still the store (raises StoreUnavailable `missing` when it is not)."""
        self.identity.check()

    def release_memory(self) -> None:
        """The connection's page cache (up to 2 MB) is rebuilt from the file on demand."""
        self.db.execute("PRAGMA shrink_memory")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT: a guarded multi-statement write."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
            self.db.execute("COMMIT")
        except BaseException:
            _rollback(self.db)
            raise

    # --- sessions ---------------------------------------------------------------------------

    def create_session(self, session_id: str, workspace: str, model: str, title: str = "",
                       parent_id: str | None = None) -> None:
        ts = now_ms()
        self.db.execute(
            "INSERT INTO sessions(id, workspace, model, title, parent_id, created_at, updated_at)"
            " VALUES (?,?,?,?,?,?,?)", (session_id, workspace, model, title, parent_id, ts, ts))

    def create_fork(self, session_id: str, workspace: str, model: str, title: str, parent_id: str,
                    messages: list[Message]) -> None:
        ts = now_ms()
        with self.transaction() as db:
            db.execute("INSERT INTO sessions(id, workspace, model, title, parent_id, created_at, updated_at)"
                       " VALUES (?,?,?,?,?,?,?)", (session_id, workspace, model, title, parent_id, ts, ts))
            for message in messages:
                self._insert_message(db, session_id, message)

    def session(self, session_id: str) -> SessionRecord | None:
        row = self.db.execute("SELECT * FROM sessions WHERE id=?", (session_id,)).fetchone()
        return _session(row) if row is not None else None

    def sessions(self, limit: int = 100) -> list[SessionRecord]:
        return [_session(r) for r in self.db.execute(
            "SELECT * FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ?", (limit,))]

    # --- messages and parts -----------------------------------------------------------------

    def append_message(self, session_id: str, message: Message) -> None:
        """A message and its parts, in one transaction."""
        with self.transaction() as db:
            self._insert_message(db, session_id, message)

    def set_active_generation(self, session_id: str, generation: str | None) -> None:
        self.db.execute("UPDATE sessions SET active_generation=? WHERE id=?", (generation, session_id))

    # --- generations: each a single transaction ---------------------------------------------

    def begin_generation(self, session_id: str, generation: str, prompt: Message,
                         claim_item: str | None = None) -> None:
        with self.transaction() as db:
            if claim_item is not None:
                claim_for_send(db, claim_item, prompt.id)
            db.execute("UPDATE sessions SET active_generation=? WHERE id=?", (generation, session_id))
            self._insert_message(db, session_id, prompt)

    def end_generation(self, session_id: str, generation: str) -> None:
        self.set_active_generation(session_id, None)

    def apply_correction(self, correction: PendingCorrection, message: Message) -> None:
        with self.transaction() as db:
            row = db.execute("SELECT active_generation FROM sessions WHERE id=?", (correction.session_id,)).fetchone()
            if row is None or row[0] != correction.generation:
                raise StaleGeneration(f"session {correction.session_id} no longer runs {correction.generation}")
            if correction.queue_item is not None:
                stamp_applied(db, correction.queue_item, message.id)
            self._insert_message(db, correction.session_id, message)
            db.execute("DELETE FROM corrections WHERE session_id=? AND client_id=?",
                       (correction.session_id, correction.client_id))

    # --- pending corrections (write-ahead) ----------------------------------------------------

    def save_correction(self, correction: PendingCorrection) -> None:
        inserted = self.db.execute(
            "INSERT INTO corrections(session_id, client_id, generation, text, queue_item, owner, created_at)"
            " VALUES (?,?,?,?,?,?,?) ON CONFLICT(session_id, client_id) DO NOTHING",
            (correction.session_id, correction.client_id, correction.generation, correction.text,
             correction.queue_item, correction.owner, correction.created_at or now_ms()))
        if inserted.rowcount == 0:
            raise CorrectionExists(f"correction {(correction.session_id, correction.client_id)} is already pending")

    def drop_correction(self, session_id: str, client_id: str) -> None:
        self.db.execute("DELETE FROM corrections WHERE session_id=? AND client_id=?", (session_id, client_id))

    def pending_corrections(self) -> list[PendingCorrection]:
        return [_correction(r) for r in self.db.execute("SELECT * FROM corrections ORDER BY created_at, rowid")]

    def surface_correction(self, correction: PendingCorrection, item: QueueItem) -> None:
        with self.transaction() as db:
            if correction.queue_item is not None:
                requeue_steered(db, correction.queue_item, item.status)
            else:
                self._queue_insert(db, item)
            db.execute("DELETE FROM corrections WHERE session_id=? AND client_id=?",
                       (correction.session_id, correction.client_id))

    def _insert_message(self, db: sqlite3.Connection, session_id: str, message: Message) -> None:
        ts = now_ms()
        db.execute(  # the next seq in the same statement (one round through sqlite, not two)
            "INSERT INTO messages(id, session_id, seq, role, generation, step, created_at)"
            " SELECT ?, ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ? FROM messages WHERE session_id=?",
            (message.id, session_id, message.role.value, message.generation, message.step, ts, session_id))
        db.executemany(
            "INSERT INTO parts(id, message_id, session_id, seq, type, data, created_at) VALUES (?,?,?,?,?,?,?)",
            [(part.id, message.id, session_id, index, part.type, part.model_dump_json(), ts)
             for index, part in enumerate(message.parts)])
        db.execute("UPDATE sessions SET updated_at=? WHERE id=?", (ts, session_id))

    def messages(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[Message]:
        sql = "SELECT * FROM messages WHERE session_id=? AND seq>? ORDER BY seq"
        params: list[Any] = [session_id, after_seq]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = list(self.db.execute(sql, params))
        if not rows:
            return []
        parts: dict[str, list[Part]] = {r["id"]: [] for r in rows}
        # One fixed statement by seq range, not `IN (?,?,...)` with a mark per message: each history
        # length made a new prepared statement (the connection caches up to 128, growing with the
        # history: megabytes of sqlite memory in a long-lived server), and past 32,766 messages
        # SQLite refuses that many variables.
        for prow in self.db.execute(
                "SELECT p.message_id, p.data FROM messages m JOIN parts p ON p.message_id = m.id"
                " WHERE m.session_id=? AND m.seq>? AND m.seq<=? ORDER BY m.seq, p.seq",
                (session_id, after_seq, rows[-1]["seq"])):
            parts[prow["message_id"]].append(_PART.validate_json(prow["data"]))
        return [Message(id=r["id"], role=Role(r["role"]), parts=parts[r["id"]], generation=r["generation"],
                        step=r["step"]) for r in rows]

    def message_seq(self, message_id: str) -> int | None:
        row = self.db.execute("SELECT seq FROM messages WHERE id=?", (message_id,)).fetchone()
        return int(row[0]) if row else None

    def part(self, part_id: str) -> tuple[str, str, Part] | None:
        """(session_id, message_id, part) of a stored part."""
        row = self.db.execute("SELECT session_id, message_id, data FROM parts WHERE id=?",
                              (part_id,)).fetchone()
        if row is None:
            return None
        return row["session_id"], row["message_id"], _PART.validate_json(row["data"])

    # --- replay events ----------------------------------------------------------------------

    def record_event(self, session_id: str, kind: str, data: dict[str, Any]) -> None:
        self.db.execute("INSERT INTO events(session_id, kind, data, created_at) VALUES (?,?,?,?)",
                        (session_id, kind, json.dumps(data, sort_keys=True), now_ms()))

    def events(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT kind, data FROM events WHERE session_id=?"
        params: list[Any] = [session_id]
        if kind:
            sql += " AND kind=?"
            params.append(kind)
        return [{"kind": r["kind"], **json.loads(r["data"])} for r in self.db.execute(sql + " ORDER BY id", params)]


def _fault(exc: BaseException, path: Path) -> BaseException:
    return classify(exc, path) or exc


def _rollback(db: sqlite3.Connection) -> None:
    # sqlite has already rolled back after some failures (a full disk): a second ROLLBACK would
    # raise over the error that says why
    if db.in_transaction:
        with suppress(sqlite3.Error):
            db.execute("ROLLBACK")


def _open(path: Path, busy_ms: int) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=busy_ms / 1000)
    except (sqlite3.Error, OSError) as exc:
        raise _fault(exc, path) from exc
    try:
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        # The store appends (the B-tree's right edge) and reads a session back once: a small page cache
        # serves that as well as sqlite's 2 MB default, which a 1,000-step run filled, all of it peak RSS.
        db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        migrate(db)
    except (sqlite3.Error, OSError) as exc:
        _rollback(db)
        db.close()
        raise _fault(exc, path) from exc
    except BaseException:
        db.close()
        raise
    return db


def _identity_of(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _move_aside(path: Path, fault: StoreUnavailable) -> Path:
    """`store.db` → the first free `store.db.corrupt-<n>`, its -wal and -shm files beside it (named so
    sqlite still pairs them: the damaged file stays readable for whoever wants to rescue it)."""
    n = 1
    while path.with_name(f"{path.name}.corrupt-{n}").exists():
        n += 1
    aside = path.with_name(f"{path.name}.corrupt-{n}")
    try:
        path.rename(aside)
        for suffix in ("-wal", "-shm"):
            companion = path.with_name(path.name + suffix)
            if companion.exists():
                companion.rename(aside.with_name(aside.name + suffix))
    except OSError as exc:
        raise StoreUnavailable(StoreReason.CORRUPT, f"{fault.detail}; it could not be moved aside ({exc})",
                               str(path)) from exc
    return aside


def _classified(method: F) -> F:
    """sqlite's and the OS's failures as `StoreUnavailable`; a write is acknowledged (returns) only
    once the path is seen to still name the file it went to."""

    @functools.wraps(method)
    def call(self: Store, *args: Any, **kwargs: Any) -> Any:
        before = self.db.total_changes
        try:
            result = method(self, *args, **kwargs)
        except (sqlite3.Error, OSError) as exc:
            raise _fault(exc, self.path) from exc
        if self.db.total_changes != before:
            self.check_written()
        return result

    return call  # type: ignore[return-value]


#: not wrapped: the transaction is the wrapped methods' own tool; closing must never raise a fault
_UNWRAPPED = frozenset({"transaction", "close", "check_written"})
for _cls in reversed(Store.__mro__):
    for _name, _value in vars(_cls).items():
        if callable(_value) and not _name.startswith("_") and _name not in _UNWRAPPED:
            setattr(Store, _name, _classified(_value))


def _conforms(store: Store) -> StorePort:
    return store  # mypy checks the port is implemented in full
