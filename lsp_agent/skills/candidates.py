"""Candidate records in the store, with per-name locks.

Every state change is one guarded write: losing a race is a refusal, never a silent overwrite.
Operations that check evidence and touch files hold a lock for the name for their whole duration,
so two processes (CLI and server, two terminals) cannot interleave on one candidate; a lock whose
owner died or whose lease ran out is taken over.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lsp_agent.domain.skill_records import Candidate, State
from lsp_agent.domain.skill_rules import Rule, RuleFailed
from lsp_agent.skills.port import SkillStore

#: How long a lock holds without its owner finishing (ms); evidence checks take seconds.
LOCK_LEASE_MS = 5 * 60 * 1000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


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
    """One workspace's candidates, with the refusals a lost race or a taken name earns."""

    def __init__(self, store: SkillStore, root: Path) -> None:
        self.store = store
        self.workspace = str(root.resolve())

    # --- reading ------------------------------------------------------------------------------

    def get(self, name: str) -> Candidate | None:
        return self.store.skill_candidate(self.workspace, name)

    def all(self) -> list[Candidate]:
        return self.store.skill_candidates(self.workspace)

    # --- guarded writes -----------------------------------------------------------------------

    def create(self, candidate: Candidate) -> None:
        """Insert a new candidate; a retired one of the same name is replaced, anything else refused."""
        holder = self.store.insert_skill_candidate(self.workspace, candidate)
        if holder is not None:
            raise RuleFailed(Rule.NAME_TAKEN, f"a candidate named {candidate.name!r} already exists "
                                              f"({holder.value}); pick another name or retire it first")

    def update(self, candidate: Candidate, expected: tuple[State, ...]) -> Candidate:
        """Write `candidate` if the stored state is still one of `expected`; else wrong_state."""
        candidate = candidate.model_copy(update={"updated_at": now_ms()})
        if not self.store.update_skill_candidate(self.workspace, candidate, expected):
            current = self.get(candidate.name)
            state = current.state.value if current else "gone"
            raise RuleFailed(Rule.WRONG_STATE, f"candidate {candidate.name!r} changed under this operation (now "
                                               f"{state}); show it and try again")
        return candidate

    # --- locks --------------------------------------------------------------------------------

    @contextmanager
    def locked(self, name: str) -> Iterator[str]:
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        now = now_ms()
        if not self.store.take_skill_lock(self.workspace, name, owner, now, now + LOCK_LEASE_MS, _owner_alive):
            raise RuleFailed(Rule.LOCKED, f"candidate {name!r} is being changed by another operation "
                                          "(another lsp-agent process or request); try again when it ends")
        try:
            yield owner
        finally:
            self.store.release_skill_lock(self.workspace, name, owner)
