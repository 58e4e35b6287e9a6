"""What the Agent's entry points answer: plain values the front ends turn into their own wire shapes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lsp_agent.core.errors import Holder
from lsp_agent.core.queue_model import QueueItem
from lsp_agent.core.steering import Receipt
from lsp_agent.core.storage import SessionRecord
from lsp_agent.domain.events import VerificationStatus
from lsp_agent.domain.history import Message

__all__ = ["QueueSteerResult", "SessionPage", "SessionSummary", "Started", "Status"]


@dataclass(frozen=True)
class Started:
    session_id: str
    generation: str
    message_id: str = ""  # the stored prompt: front ends offer rewinding to it before the answer arrives


@dataclass(frozen=True)
class Status:
    state: Literal["idle", "running"]
    generation: str | None
    verification: VerificationStatus
    step: int
    max_steps: int | None


@dataclass(frozen=True)
class SessionSummary:
    record: SessionRecord
    state: Literal["idle", "running"]
    generation: str | None
    #: the process holding the session's lease when another live lsp-agent process runs it
    elsewhere: Holder | None = None


@dataclass(frozen=True)
class SessionPage:
    record: SessionRecord
    messages: list[Message]
    #: the last message's ID when more follow (pass it as `after`)
    next: str | None


@dataclass(frozen=True)
class QueueSteerResult:
    item: QueueItem
    receipt: Receipt | None
    reason: str | None = None
    started: Started | None = None
