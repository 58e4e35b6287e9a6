"""The skills' storage port: what skill candidates ask of a store, as named operations.

The sqlite store meets it by shape (`lsp_agent.store.skills`), so the rules here never see SQL and
the store never imports the skills package. Candidates and locks are kept per workspace: one store
may hold several workspaces' candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from lsp_agent.core.storage import SessionRecord
from lsp_agent.domain.history import Message, ToolCallPart
from lsp_agent.domain.skill_records import Candidate, State, StoredPart


class SkillStore(Protocol):
    # --- the conversation record, as the evidence rules read it ------------------------------

    def session(self, session_id: str) -> SessionRecord | None: ...

    def messages(self, session_id: str) -> list[Message]: ...

    def stored_part(self, part_id: str) -> StoredPart | None:
        """The part with this ID and where it sits, or None."""
        ...

    def tool_calls_before(self, session_id: str, before_seq: int) -> list[ToolCallPart]:
        """The model's tool calls in the session's messages before `before_seq`."""
        ...

    # --- candidates ---------------------------------------------------------------------------

    def skill_candidate(self, workspace: str, name: str) -> Candidate | None: ...

    def skill_candidates(self, workspace: str) -> list[Candidate]:
        """Every candidate of the workspace, by name."""
        ...

    def insert_skill_candidate(self, workspace: str, candidate: Candidate) -> State | None:
        """Write a new candidate, replacing a retired one of the same name; when a live one holds
        the name nothing is written and its state is returned."""
        ...

    def update_skill_candidate(self, workspace: str, candidate: Candidate, expected: tuple[State, ...]) -> bool:
        """One guarded write: False (nothing written) unless the stored state is one of `expected`."""
        ...

    # --- per-name locks -----------------------------------------------------------------------

    def take_skill_lock(self, workspace: str, name: str, owner: str, now: int, expires_at: int,
                        holder_alive: Callable[[str], bool]) -> bool:
        """Take the lock unless another holder's lease runs and `holder_alive` says it is still
        there (False then)."""
        ...

    def release_skill_lock(self, workspace: str, name: str, owner: str) -> None: ...
