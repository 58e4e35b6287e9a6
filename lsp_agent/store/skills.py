"""The skill candidates' SQL: their records, the per-name lock rows, and the two reads the
evidence rules make of the conversation record.

Candidates are kept per workspace (one store may serve several). Every state change is one guarded
write (`UPDATE … WHERE state IN (…)`), so a caller that lost a race sees a refusal it can name, not
a silent overwrite. Which refusal, and what it says, is the skills package's business.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from pydantic import TypeAdapter

from lsp_agent.domain.history import Part, Role, ToolCallPart
from lsp_agent.domain.skill_records import Candidate, State, StoredPart

_PART = TypeAdapter[Part](Part)


class SkillTables:
    """The skills half of the sqlite store (mixed into `Store`)."""

    db: sqlite3.Connection

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    # --- candidates ---------------------------------------------------------------------------

    def skill_candidate(self, workspace: str, name: str) -> Candidate | None:
        row = self.db.execute("SELECT record FROM skill_candidates WHERE workspace=? AND name=?",
                              (workspace, name)).fetchone()
        return Candidate.model_validate_json(row["record"]) if row else None

    def skill_candidates(self, workspace: str) -> list[Candidate]:
        rows = self.db.execute("SELECT record FROM skill_candidates WHERE workspace=? ORDER BY name", (workspace,))
        return [Candidate.model_validate_json(r["record"]) for r in rows]

    def insert_skill_candidate(self, workspace: str, candidate: Candidate) -> State | None:
        """Write a new candidate, replacing a retired one of the same name; a live one is left as it
        is and its state returned (None: written)."""
        record = candidate.model_dump_json(by_alias=True)
        with self.transaction() as db:
            row = db.execute("SELECT state FROM skill_candidates WHERE workspace=? AND name=?",
                             (workspace, candidate.name)).fetchone()
            if row is not None and row["state"] != State.RETIRED.value:
                return State(row["state"])
            db.execute("INSERT OR REPLACE INTO skill_candidates(workspace, name, state, record, created_at, "
                       "updated_at) VALUES (?,?,?,?,?,?)",
                       (workspace, candidate.name, candidate.state.value, record, candidate.created_at,
                        candidate.updated_at))
        return None

    def update_skill_candidate(self, workspace: str, candidate: Candidate, expected: tuple[State, ...]) -> bool:
        """Write `candidate` if its stored state is still one of `expected`; False if it is not."""
        marks = ",".join("?" * len(expected))
        cursor = self.db.execute(
            f"UPDATE skill_candidates SET state=?, record=?, updated_at=? WHERE workspace=? AND name=? "
            f"AND state IN ({marks})",
            (candidate.state.value, candidate.model_dump_json(by_alias=True), candidate.updated_at,
             workspace, candidate.name, *(s.value for s in expected)))
        return cursor.rowcount == 1

    # --- per-name locks -----------------------------------------------------------------------

    def take_skill_lock(self, workspace: str, name: str, owner: str, now: int, expires_at: int,
                        holder_alive: Callable[[str], bool]) -> bool:
        """Take the name's lock for `owner` unless another holder's lease runs and `holder_alive`
        says it is still there; False when it is held."""
        with self.transaction() as db:
            row = db.execute("SELECT owner, expires_at FROM skill_locks WHERE workspace=? AND name=?",
                             (workspace, name)).fetchone()
            if row is not None and row["expires_at"] > now and holder_alive(row["owner"]):
                return False
            db.execute("INSERT OR REPLACE INTO skill_locks(workspace, name, owner, acquired_at, expires_at) "
                       "VALUES (?,?,?,?,?)", (workspace, name, owner, now, expires_at))
        return True

    def release_skill_lock(self, workspace: str, name: str, owner: str) -> None:
        """Drop the lock if `owner` still holds it (one taken over after its lease ran out stays)."""
        self.db.execute("DELETE FROM skill_locks WHERE workspace=? AND name=? AND owner=?", (workspace, name, owner))

    # --- what the evidence rules read -------------------------------------------------------

    def stored_part(self, part_id: str) -> StoredPart | None:
        row = self.db.execute(
            "SELECT p.session_id, p.message_id, p.data, m.role, m.seq, s.workspace FROM parts p "
            "JOIN messages m ON m.id = p.message_id JOIN sessions s ON s.id = p.session_id WHERE p.id=?",
            (part_id,)).fetchone()
        if row is None:
            return None
        return StoredPart(session_id=row["session_id"], message_id=row["message_id"], data=row["data"],
                          role=Role(row["role"]), seq=row["seq"], workspace=row["workspace"])

    def tool_calls_before(self, session_id: str, before_seq: int) -> list[ToolCallPart]:
        """The model's tool calls in the session's messages before `before_seq`."""
        rows = self.db.execute(
            "SELECT p.data FROM parts p JOIN messages m ON m.id = p.message_id "
            "WHERE p.session_id=? AND p.type='tool_call' AND m.role=? AND m.seq<?",
            (session_id, Role.ASSISTANT.value, before_seq))
        calls = (_PART.validate_json(row["data"]) for row in rows)
        return [call for call in calls if isinstance(call, ToolCallPart)]


__all__ = ["SkillTables"]
