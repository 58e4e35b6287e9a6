"""Verification status, derived from the record alone — never from the model's words.

`verified`: the latest verify_project result passed (with at least one executed
check) and nothing was written after it. `failed`: the latest one failed and
nothing was written after it. `not_run`: none yet, or a later write made it stale.

A write is any of: a tool result with `written` paths (the agent's edit tools; a
command — run_command, or verify_project itself — whose run changed workspace files,
`writer: command`), or a harness note that files changed outside the agent. The
first write after the latest check is named in `invalidated_by`, so a downgrade
always says why. A rewind's note that names a check (`restored_check`) puts that
check back: the files are again exactly the tree it passed on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import replace as dataclass_replace
from typing import Any

from lsp_agent.domain.events import VerificationStatus
from lsp_agent.domain.history import Message, TextPart, ToolResultPart

#: metadata key for a change made outside the agent, recorded as a marker part.
EXTERNAL_CHANGE = "external_change"
#: metadata key beside it on a rewind's note: the part id of the check whose tree the rewind put back
#: exactly (that check stands again; any other change note makes the latest check stale).
RESTORED_CHECK = "restored_check"


#: Who made a write: the agent's edit tool, a program the harness ran, or a change seen from outside.
AGENT_TOOL = "agent_tool"
COMMAND = "command"
OUTSIDE = "outside_process"


@dataclass(frozen=True)
class Invalidation:
    """The write that made the latest check stale."""
    paths: tuple[str, ...]
    by: str  # agent_tool | command | outside_process
    step: int | None
    tool: str | None = None  # the tool whose call wrote (None for an outside change)
    check_status: VerificationStatus | None = None  # what the check had said before it went stale

    def reason(self) -> str:
        who = {AGENT_TOOL: f"the agent's {self.tool or 'edit'}", COMMAND: f"a command ({self.tool})",
               OUTSIDE: "a change outside the agent"}.get(self.by, self.by)
        when = f" at step {self.step}" if self.step is not None else ""
        was = f" (it had {self.check_status.value})" if self.check_status is not None else ""
        return f"{', '.join(self.paths)} written by {who}{when} after the last check{was}"


@dataclass(frozen=True)
class Verification:
    status: VerificationStatus
    part_id: str | None = None
    message_id: str | None = None  # the message that stores the part (a citation needs both)
    invalidated_by: Invalidation | None = None


def _check_status(envelope: dict[str, Any]) -> VerificationStatus | None:
    status = envelope.get("status")
    checks = envelope.get("checks") or []
    executed = [c for c in checks if c.get("executed", True)]
    if status == "passed":
        return VerificationStatus.VERIFIED if executed else VerificationStatus.NOT_RUN
    if status == "failed":
        return VerificationStatus.FAILED
    # `error`: a check that started and broke (timeout, signal) failed; one that never started did not.
    started = [c for c in checks if c.get("timedOut") or c.get("signal") or c.get("exitCode") is not None]
    return VerificationStatus.FAILED if started else VerificationStatus.NOT_RUN


def is_write(part: ToolResultPart) -> bool:
    return bool(part.metadata.get("written"))


def _stale(check: Verification | None, inv: Invalidation) -> Verification | None:
    """The first write after a standing check names why it no longer stands."""
    if check is None or check.invalidated_by is not None:
        return check
    if check.status is VerificationStatus.NOT_RUN:
        return None  # nothing stood, so nothing was invalidated
    return Verification(VerificationStatus.NOT_RUN, invalidated_by=dataclass_replace(inv, check_status=check.status))


def derive(messages: Iterable[Message]) -> Verification:
    latest: Verification | None = None
    #: every check so far as it stood right after its own run (its own writes counted)
    checks: dict[str, Verification] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                paths = part.metadata.get(EXTERNAL_CHANGE)
                restored = checks.get(str(part.metadata.get(RESTORED_CHECK)))
                if paths and restored is not None and restored.status is VerificationStatus.VERIFIED \
                        and restored.invalidated_by is None:
                    # the files were put back to exactly the tree this check passed on
                    latest = restored
                elif paths:
                    latest = _stale(latest, Invalidation(tuple(map(str, paths)), OUTSIDE, message.step))
                continue
            if not isinstance(part, ToolResultPart):
                continue
            envelope = part.metadata.get("envelope")
            written = [str(p) for p in part.metadata.get("written") or []]
            by = COMMAND if part.metadata.get("writer") == COMMAND else AGENT_TOOL
            if isinstance(envelope, dict):
                status = _check_status(envelope)
                latest = Verification(status, part.id, message.id) if status is not None else None
                if written and by == COMMAND:  # the check's own run changed the sources it checked
                    latest = _stale(latest, Invalidation(tuple(written), by, message.step, part.name))
                if latest is not None:
                    checks[part.id] = latest
            elif written:
                latest = _stale(latest, Invalidation(tuple(written), by, message.step, part.name))
    return latest or Verification(VerificationStatus.NOT_RUN)
