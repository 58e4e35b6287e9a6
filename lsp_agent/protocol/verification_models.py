"""`agent/verificationChanged`: a session's verification status changed while no generation ran.

The status is derived from the record; a change made outside the agent after a run (the user's own
edit or a revert in the editor, another program) makes the last check stale. The run's `run_finish`
already went out, so without this the editor would keep showing a result the sources no longer
back. Sent only for idle sessions: a running generation reports the change in its own run_finish.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from lsp_agent.domain.events import InvalidatedBy, VerificationStatus
from lsp_agent.protocol.models import Result

AGENT_VERIFICATION_CHANGED = "agent/verificationChanged"


class VerificationChangedParams(Result):
    session_id: str
    verification: VerificationStatus = Field(description="The status derived from the record now.")
    verification_reason: str | None = Field(
        None, description="Why the status is `not_run` although a check had stood: names the write, who made it "
                          "and when (as in run_finish).")
    invalidated_by: InvalidatedBy | None = None


METHOD_DOC: tuple[str, Literal["notification"], str, type[BaseModel], None, str] = (
    AGENT_VERIFICATION_CHANGED, "notification", "server → client", VerificationChangedParams, None,
    "An idle session's verification status changed: a change outside the agent (the user's edit or revert, "
    "another program) made the last check stale after its run finished. Same fields as run_finish's "
    "`verification`, `verificationReason` and `invalidatedBy`; not sent while a generation runs (its run_finish "
    "says it).",
)
