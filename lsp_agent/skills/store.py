"""Candidate records in the local store, with per-name locks.

Every state change is one guarded write (`UPDATE … WHERE state IN (…)`): losing a race is a
refusal, never a silent overwrite. Operations that check evidence and touch files hold a lock row
for the name for their whole duration, so two processes (CLI and server, two terminals) cannot
interleave on one candidate; a lock whose owner died or whose lease ran out is taken over.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lsp_agent.domain.skill_records import Candidate, State
from lsp_agent.domain.skill_rules import Rule, RuleFailed
from lsp_agent.store.db import Store, now_ms

#: How long a lock holds without its owner finishing (ms); evidence checks take seconds.
LOCK_LEASE_MS = 5 * 60 * 1000


def _owner_alive(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return True  # another machine: trust the lease
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class CandidateStore:
    def __init__(self, store: Store, root: Path) -> None:
        self.store = store
        self.workspace = str(root.resolve())

    # --- reading ------------------------------------------------------------------------------

    def get(self, name: str) -> Candidate | None:
        row = self.store.db.execute("SELECT record FROM skill_candidates WHERE workspace=? AND name=?",
                                    (self.workspace, name)).fetchone()
        return Candidate.model_validate_json(row["record"]) if row else None

    def all(self) -> list[Candidate]:
        rows = self.store.db.execute("SELECT record FROM skill_candidates WHERE workspace=? ORDER BY name",
                                     (self.workspace,))
        return [Candidate.model_validate_json(r["record"]) for r in rows]

    # --- guarded writes -----------------------------------------------------------------------

    def create(self, candidate: Candidate) -> None:
        """Insert a new candidate; a retired one of the same name is replaced, anything else refused."""
        record = candidate.model_dump_json(by_alias=True)
        with self.store.transaction() as db:
            row = db.execute("SELECT state FROM skill_candidates WHERE workspace=? AND name=?",
                             (self.workspace, candidate.name)).fetchone()
            if row is not None and row["state"] != State.RETIRED.value:
                raise RuleFailed(Rule.NAME_TAKEN, f"a candidate named {candidate.name!r} already exists "
                                                  f"({row['state']}); pick another name or retire it first")
            db.execute("INSERT OR REPLACE INTO skill_candidates(workspace, name, state, record, created_at, "
                       "updated_at) VALUES (?,?,?,?,?,?)",
                       (self.workspace, candidate.name, candidate.state.value, record, candidate.created_at,
                        candidate.updated_at))

    def update(self, candidate: Candidate, expected: tuple[State, ...]) -> Candidate:
        """Write `candidate` if the stored state is still one of `expected`; else wrong_state."""
        candidate = candidate.model_copy(update={"updated_at": now_ms()})
        marks = ",".join("?" * len(expected))
        cursor = self.store.db.execute(
            f"UPDATE skill_candidates SET state=?, record=?, updated_at=? WHERE workspace=? AND name=? "
            f"AND state IN ({marks})",
            (candidate.state.value, candidate.model_dump_json(by_alias=True), candidate.updated_at,
             self.workspace, candidate.name, *(s.value for s in expected)))
        if cursor.rowcount != 1:
            current = self.get(candidate.name)
            state = current.state.value if current else "gone"
            raise RuleFailed(Rule.WRONG_STATE, f"candidate {candidate.name!r} changed under this operation (now "
                                               f"{state}); show it and try again")
        return candidate

    # --- locks --------------------------------------------------------------------------------

    @contextmanager
    def locked(self, name: str) -> Iterator[str]:
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        self._acquire(name, owner)
        try:
            yield owner
        finally:
            self.store.db.execute("DELETE FROM skill_locks WHERE workspace=? AND name=? AND owner=?",
                                  (self.workspace, name, owner))

    def _acquire(self, name: str, owner: str) -> None:
        now = now_ms()
        with self.store.transaction() as db:
            row = db.execute("SELECT owner, expires_at FROM skill_locks WHERE workspace=? AND name=?",
                             (self.workspace, name)).fetchone()
            if row is not None and row["expires_at"] > now and _owner_alive(row["owner"]):
                raise RuleFailed(Rule.LOCKED, f"candidate {name!r} is being changed by another operation "
                                              "(another lsp-agent process or request); try again when it ends")
            db.execute("INSERT OR REPLACE INTO skill_locks(workspace, name, owner, acquired_at, expires_at) "
                       "VALUES (?,?,?,?,?)", (self.workspace, name, owner, now, now + LOCK_LEASE_MS))
