"""Verification status, derived from the record alone — never from the model's words.

`verified`: the latest verify_project result passed (with at least one executed
check) and nothing was written after it. `failed`: the latest one failed and
nothing was written after it. `not_run`: none yet, or a later write (the agent's
or an outside change) made it stale.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lsp_agent.core.events import VerificationStatus
from lsp_agent.core.history import Message, TextPart, ToolResultPart

#: metadata key for a change made outside the agent, recorded as a marker part.
EXTERNAL_CHANGE = "external_change"


@dataclass(frozen=True)
class Verification:
    status: VerificationStatus
    part_id: str | None = None
    message_id: str | None = None  # the message that stores the part (a citation needs both)


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


def derive(messages: Iterable[Message]) -> Verification:
    latest: Verification | None = None
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                if part.metadata.get(EXTERNAL_CHANGE):
                    latest = None
                continue
            if not isinstance(part, ToolResultPart):
                continue
            envelope = part.metadata.get("envelope")
            if isinstance(envelope, dict):
                status = _check_status(envelope)
                latest = Verification(status, part.id, message.id) if status is not None else None
            elif is_write(part):
                latest = None
    return latest or Verification(VerificationStatus.NOT_RUN)
