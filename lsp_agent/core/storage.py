"""The storage port: what the core asks of a session store, as named operations.

Each operation that must be atomic is one call here (one transaction in the sqlite store,
`lsp_agent/store/`): beginning a generation claims its queued row, writes the prompt and
marks the session busy together; applying a correction re-checks the generation, stamps its
queued row and writes the message together. The core never sees a connection or SQL.
An implementation raises `StaleGeneration` or `RowChanged` to refuse, and then changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from lsp_agent.core.errors import AgentError, AgentErrorKind
from lsp_agent.core.queue_model import QueueItem, QueueStatus
from lsp_agent.domain.history import Message, Part

__all__ = [
    "LeaseStore",
    "PendingCorrection",
    "QueueStore",
    "RowChanged",
    "SessionLease",
    "SessionRecord",
    "SessionStore",
    "StaleGeneration",
    "Store",
    "StoreReason",
    "StoreUnavailable",
]


class StaleGeneration(Exception):
    """The session is no longer running the generation the write was meant for."""


class RowChanged(Exception):
    """A guarded queue write found the row in another state (changed under us)."""


class CorrectionExists(Exception):
    """A pending correction with this session and clientID is already stored: accepted under an
    earlier receipt table, now gone (a restart whose recovery left it to its still-living owner)."""


class StoreReason(StrEnum):
    READ_ONLY = "read_only"  # the state directory or the file cannot be written (a read-only mount, permissions)
    FULL = "full"  # no space left on the state directory's file system
    CORRUPT = "corrupt"  # the file is not a database, or its pages are damaged
    LOCKED = "locked"  # another process held the database's write lock longer than the busy timeout
    MISSING = "missing"  # the state directory or the database file was deleted (or replaced) under us
    IO = "io"  # any other I/O failure of the file system


class StoreUnavailable(AgentError):
    """A store operation failed for a reason of the store's disk, not of the request: nothing of it was
    acknowledged. Every front end shows it as `store_unavailable` with the reason; a running generation
    ends with it (`error`), and the session is usable again once the cause is gone (except `missing`, whose
    records went with the directory)."""

    def __init__(self, reason: StoreReason, detail: str, where: str = "") -> None:
        self.reason = reason
        self.detail = detail
        place = f" at {where}" if where else ""
        super().__init__(AgentErrorKind.STORE_UNAVAILABLE,
                         f"the session store{place} is unavailable ({reason.value}): {detail}")


@dataclass(frozen=True)
class SessionRecord:
    id: str
    workspace: str
    model: str
    title: str
    parent_id: str | None
    created_at: int
    updated_at: int
    active_generation: str | None = None


@dataclass(frozen=True)
class PendingCorrection:
    """An accepted steering correction, on disk until it is applied or settled (write-ahead)."""

    session_id: str
    client_id: str
    generation: str
    text: str
    queue_item: str | None
    owner: str
    created_at: int = 0


@dataclass(frozen=True)
class SessionLease:
    """Which process writes a session now: its identity (core/process_identity.py), when it took the
    session, when it last said it is still there, and until when that heartbeat holds for a process
    that cannot check the holder's identity (wall-clock ms; the holder's own setting decides it)."""

    session_id: str
    owner: str
    acquired_at: int
    heartbeat_at: int
    expires_at: int


class SessionStore(Protocol):
    # --- sessions ---------------------------------------------------------------------------
    def create_session(self, session_id: str, workspace: str, model: str, title: str = "",
                       parent_id: str | None = None) -> None: ...

    def create_fork(self, session_id: str, workspace: str, model: str, title: str, parent_id: str,
                    messages: list[Message]) -> None:
        """A new session holding these messages, all or nothing (a crash never leaves half a fork)."""
        ...

    def session(self, session_id: str) -> SessionRecord | None: ...

    def sessions(self, limit: int = 100) -> list[SessionRecord]: ...

    # --- messages ---------------------------------------------------------------------------
    def append_message(self, session_id: str, message: Message) -> None: ...

    def messages(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[Message]: ...

    def message_seq(self, message_id: str) -> int | None: ...

    def part(self, part_id: str) -> tuple[str, str, Part] | None: ...

    # --- generations (each one transaction) --------------------------------------------------
    def begin_generation(self, session_id: str, generation: str, prompt: Message,
                         claim_item: str | None = None) -> None:
        """Claim `claim_item` (queued → sent, else RowChanged), write the prompt, mark the session
        as running `generation` — all or nothing."""
        ...

    def end_generation(self, session_id: str, generation: str) -> None:
        """The session runs nothing now."""
        ...

    def apply_correction(self, correction: PendingCorrection, message: Message) -> None:
        """If the session still runs the correction's generation (else StaleGeneration): stamp its queued
        row applied (else RowChanged), write the message and forget the pending correction — together."""
        ...

    # --- pending corrections (write-ahead) ----------------------------------------------------
    def save_correction(self, correction: PendingCorrection) -> None:
        """Store it (CorrectionExists if one with its session and clientID is stored: never replaced)."""
        ...

    def drop_correction(self, session_id: str, client_id: str) -> None: ...

    def pending_corrections(self) -> list[PendingCorrection]: ...

    def surface_correction(self, correction: PendingCorrection, item: QueueItem) -> None:
        """A correction whose generation is gone becomes a queue row (or, when it came from one, that
        row goes back to the queue), and the pending record goes — together."""
        ...

    # --- replay events ----------------------------------------------------------------------
    def record_event(self, session_id: str, kind: str, data: dict[str, Any]) -> None: ...

    def events(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...

    def release_memory(self) -> None:
        """Free caches that reload on demand (called when sessions are dropped from memory)."""
        ...


class QueueStore(Protocol):
    def queue_get(self, item_id: str) -> QueueItem | None: ...

    def queue_waiting(self, session_id: str) -> list[QueueItem]:
        """queued and paused rows, FIFO (position, then creation)."""
        ...

    def queue_settled(self, session_id: str) -> list[QueueItem]:
        """The other rows, newest change first."""
        ...

    def queue_next(self, session_id: str) -> QueueItem | None:
        """The first `queued` row."""
        ...

    def queue_add(self, item: QueueItem) -> QueueItem:
        """Insert at the back (the store assigns `position`)."""
        ...

    def queue_update(self, item_id: str, changes: Mapping[str, Any], allowed: tuple[QueueStatus, ...],
                     expected_updated_at: int | None = None, to_front: bool = False) -> bool:
        """One guarded write: only when the row's status is in `allowed` (and, if given, its `updated_at`
        matches). `updated_at` always moves forward; `to_front` moves the row before every other row of its
        session. False when the guard did not match (nothing written)."""
        ...

    def queue_pause_waiting(self, session_id: str) -> int: ...

    def queue_requeue_steered(self, item_id: str, status: QueueStatus) -> bool:
        """A steered row whose correction did not apply goes back to `status` at its old place."""
        ...

    def queue_orphaned_steers(self) -> list[tuple[str, str | None]]:
        """(id, steer owner) of rows steered into a generation whose correction never applied."""
        ...


class LeaseStore(Protocol):
    """One writer per session (core/lease.py holds the rules; the store only keeps the rows)."""

    def acquire_lease(self, session_id: str, owner: str, now: int, expires_at: int,
                      holder_live: Callable[[SessionLease], bool]) -> tuple[bool, SessionLease | None]:
        """In one transaction: take the session's lease for `owner` (heartbeat `now`, holding until
        `expires_at`) unless another owner holds it and `holder_live` says that holder is still there.
        Returns (taken, the lease found before)."""
        ...

    def renew_lease(self, session_id: str, owner: str, now: int, expires_at: int) -> bool:
        """The heartbeat; False when `owner` no longer holds the lease (it was taken over)."""
        ...

    def release_lease(self, session_id: str, owner: str) -> None:
        """Drop the lease if `owner` still holds it."""
        ...

    def lease(self, session_id: str) -> SessionLease | None: ...

    def leases(self) -> list[SessionLease]: ...


class Store(SessionStore, QueueStore, LeaseStore, Protocol):
    """Everything the core persists."""
