"""Params and results of `agent/compact` and `agent/handoff` (context management).

camelCase on the wire like every other custom method; params are strict and closed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lsp_agent.protocol.models import Params, Result, SessionID

#: client → server requests
AGENT_COMPACT = "agent/compact"
AGENT_HANDOFF = "agent/handoff"
CONTEXT_REQUESTS = (AGENT_COMPACT, AGENT_HANDOFF)


class CompactParams(Params):
    session_id: SessionID = Field(description="The session whose older history to compact.")


class RepairedItem(Result):
    """A required item the model's summary did not cite, put back by the harness."""

    kind: Literal["task", "user", "constraint", "failed_check", "failed_attempt", "file", "next_step"]
    pointer: str = Field(description="`msg_…/prt_…` of the original part, `FILE:L<n>` of an instruction line, a "
                               "file's path (`file`), or `next step`.")
    text: str


class CompactResult(Result):
    """`compacted`: the summary replaced the older history (originals stay in the store).
    `in_progress`: the session is running; it compacts before its next model request (or another
    compaction was already running). `nothing_to_compact` / `freed_too_little`: nothing changed."""

    status: Literal["compacted", "nothing_to_compact", "freed_too_little", "in_progress"]
    message: str
    seq: int = Field(0, description="The compaction's number in this session (1, 2, …); 0 when none happened.")
    summary_message_id: str | None = Field(None, description="The stored summary (compaction marker) message.")
    replaced_messages: int = Field(0, description="Messages of the model-visible history it replaced.")
    tokens_before: int = 0
    tokens_after: int = 0
    repaired: list[RepairedItem] = Field(default_factory=list)
    source: Literal["model", "harness"] | None = Field(
        None, description="Who wrote the summary: the model, or the harness when the model gave none.")


class HandoffParams(Params):
    session_id: SessionID = Field(description="The idle session to hand off from.")


class HandoffResult(Result):
    """The fresh session (its `parentID` is the old one) and the generation now running in it."""

    session_id: str
    generation: str
    parent_id: str
