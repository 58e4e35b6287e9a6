"""A follow-up queue row as the core and the wire see it (the storage port returns these)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from lsp_agent.domain.wire import WireModel


class QueueStatus(StrEnum):
    QUEUED = "queued"
    PAUSED = "paused"
    SENT = "sent"
    CANCELLED = "cancelled"
    FAILED = "failed"


WAITING = (QueueStatus.QUEUED, QueueStatus.PAUSED)


class QueueItem(WireModel):
    id: str
    session_id: str
    kind: str
    text: str
    attachments: list[Any] = Field(default_factory=list)
    status: QueueStatus
    position: int
    created_at: int
    updated_at: int
    sent_at: int | None = None
    message_id: str | None = None
    steered_into: str | None = None
    steered_at: int | None = None
    steered_applied_at: int | None = None
    cancelled_at: int | None = None
    error: str | None = None
