"""Params and results of steering and the follow-up queue, camelCase on the wire.

Receipts and queue rows are the core's records seen through the protocol: the `…Out` models ignore
fields the core may add later (the wire only grows when these models do). Results that promise a
`null` (`generation`, `receipt`) keep it on the wire instead of omitting it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, PrivateAttr, computed_field

from lsp_agent.core.errors import AgentError
from lsp_agent.core.queue import MAX_STEER_CHARS, QueueItem, QueueStatus, steer_refusal
from lsp_agent.core.steering import MAX_PENDING, MAX_RECEIPTS, ReceiptStatus, RejectReason
from lsp_agent.protocol.models import ATTACHMENTS_DOC as BASE_ATTACHMENTS_DOC
from lsp_agent.protocol.models import MAX_ATTACHMENTS, MAX_PROMPT_CHARS, Int64, Params, Result, RunResult, SessionID

#: The steering clientID: a short plain token, since it keys a stored pending correction and comes back in
#: receipts. Length is part of the pattern so a long ID is an ordinary 400.
CLIENT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,100}$"
#: What a queued message may carry besides its text (core/attachments.py sends them).
ATTACHMENTS_DOC = BASE_ATTACHMENTS_DOC + (" A row with another kind is not sent: it becomes `failed` with the "
                                          "reason in `error`. A row with any attachment cannot be steered.")

TaskID = Annotated[str, Field(min_length=1, max_length=200, description="A queued item's `id` (`que_…`).")]


class _Out(Result):
    # A view of a core record: fields the core adds later are dropped, not an error.
    model_config = ConfigDict(extra="ignore")


def _keep(data: dict[str, object], *names: str) -> dict[str, object]:
    for name in names:
        data.setdefault(name, None)
    return data


# --- receipts ---------------------------------------------------------------------------------


class ReceiptOut(_Out):
    """What became of one correction: `accepted` (pending, written at the next step boundary),
    `applied` (written; `messageID` is the new user message) or `rejected` (with `reason`)."""

    status: ReceiptStatus
    session_id: str
    generation: str | None = Field(None, description="The generation the correction was addressed to.")
    client_id: str = Field(description="The client's idempotency key; a retry with the same text gets this "
                                       "receipt again.")
    message_id: str | None = Field(None, description="The user message the correction became (when applied).")
    reason: RejectReason | None = Field(None, description="Why it was rejected (when rejected).")
    detail: str | None = Field(None, description="Human-readable detail of the reason.")


# --- agent/steering ---------------------------------------------------------------------------


class SteeringParams(Params):
    session_id: SessionID


class SteeringResult(Result):
    generation: str | None = Field(description="The running generation's UUID, or null when idle. Send it as "
                                               "`expectedGeneration`.")
    receipts: list[ReceiptOut] = Field(description=f"Recent receipts of this session, oldest first (at most "
                                                   f"`limits.steer_receipts`, default {MAX_RECEIPTS}; not kept "
                                                   "across restarts).")

    def wire(self) -> dict[str, object]:
        return _keep(super().wire(), "generation")


# --- agent/steer ------------------------------------------------------------------------------


class SteerParams(Params):
    """Correct the running generation. The text is written as a user message at the next step
    boundary (after the current step's tool results). A refusal (no running generation, a stale
    generation, text too long, too many pending) is a `rejected` receipt naming the reason, not an error."""

    session_id: SessionID
    expected_generation: str = Field(min_length=1, max_length=200,
                                     description="The generation this correction is for (from agent/steering or "
                                                 "agent/run); another generation never receives it.")
    client_id: str = Field(pattern=CLIENT_ID_PATTERN,
                           description="Unique per correction: a retry with the same text returns the same receipt; "
                                       "other text under a used ID is a conflict (-32009).")
    text: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS,
                      description=f"The correction, trimmed; over `limits.steer_chars` (default {MAX_STEER_CHARS:,}) "
                                  f"characters after trimming it is rejected with reason `too_long`; past "
                                  f"`limits.steer_pending` (default {MAX_PENDING}) pending corrections of a "
                                  f"session, with `too_many_pending`.")


# --- the follow-up queue ----------------------------------------------------------------------


def _blocker_optional(schema: dict[str, Any]) -> None:
    # Null fields are omitted on the wire, computed ones too.
    schema["required"] = [name for name in schema.get("required", []) if name != "steerBlocker"]


class QueueItemOut(_Out):
    """A queued message and its audit trail. Waiting rows are `queued` or `paused` (after an
    interrupt: they never start by themselves); `sent` rows became a generation's prompt;
    `cancelled` rows with `steeredInto` were steered into that generation; `failed` rows could not be
    sent as they are (`error` says why) and are kept."""

    model_config = ConfigDict(extra="ignore", json_schema_extra=_blocker_optional)

    id: str = Field(description="The `taskID` of the agent/queue/* methods.")
    session_id: str
    kind: str = Field(description="`follow_up`, or another kind such as `command`.")
    text: str
    attachments: list[Any] = Field(default_factory=list, description=ATTACHMENTS_DOC)
    status: QueueStatus
    position: int = Field(description="FIFO order among the session's rows (smaller runs first).")
    created_at: int = Field(description="Milliseconds since the epoch.")
    updated_at: int = Field(description="Milliseconds since the epoch; pass as `expectedUpdatedAt` to edit.")
    sent_at: int | None = None
    message_id: str | None = Field(None, description="The message the row became (its prompt, or its correction).")
    steered_into: str | None = Field(None, description="The generation the row was steered into.")
    steered_at: int | None = None
    steered_applied_at: int | None = Field(None, description="Set in the same transaction as the message it "
                                                             "became; absent while the correction is pending.")
    cancelled_at: int | None = None
    error: str | None = Field(None, description="Why a `failed` row was not sent (e.g. an attachment the model "
                                                "cannot take); its text and attachments are kept.")
    #: `limits.steer_chars` of the server showing the row (the protocol module reads no settings)
    _steer_chars: int = PrivateAttr(MAX_STEER_CHARS)

    @classmethod
    def of(cls, record: dict[str, Any], steer_chars: int) -> QueueItemOut:
        out = cls.model_validate(record)
        out._steer_chars = steer_chars
        return out

    @computed_field(description="Whether agent/queue/steer would admit this row now: a waiting text "  # type: ignore[prop-decorator]
                                "follow-up without attachments, not steered yet, at most "
                                f"`limits.steer_chars` (default {MAX_STEER_CHARS:,}) characters.")
    @property
    def steerable(self) -> bool:
        return self._refusal() is None

    @computed_field(description="Why the row cannot be steered, when `steerable` is false.")  # type: ignore[prop-decorator]
    @property
    def steer_blocker(self) -> str | None:
        refusal = self._refusal()
        return refusal.message if refusal is not None else None

    def _refusal(self) -> AgentError | None:
        # The core's rule, on the core's record: the client never re-derives it.
        return steer_refusal(QueueItem.model_validate(self.model_dump(exclude={"steerable", "steer_blocker"})),
                             self._steer_chars)


class QueueListParams(Params):
    session_id: SessionID


class QueueListResult(Result):
    items: list[QueueItemOut] = Field(description="Waiting rows in the order they will run, then the history "
                                                  "(sent and cancelled rows), newest first.")


class QueueAddParams(Params):
    """Queue a message. On an idle session with nothing queued ahead it starts at once."""

    session_id: SessionID
    text: str = Field(max_length=MAX_PROMPT_CHARS, description="The message; may be empty only with attachments.")
    kind: str = Field("follow_up", min_length=1, max_length=100,
                      description="`follow_up` (steerable) or another kind, e.g. `command`.")
    attachments: list[Any] = Field(default_factory=list, max_length=MAX_ATTACHMENTS,
                                   description=ATTACHMENTS_DOC)


class QueueAddResult(Result):
    item: QueueItemOut
    started: RunResult | None = Field(None, description="Present when the message started a generation at once.")


class QueueTaskParams(Params):
    task_id: TaskID


class QueueSteerResult(Result):
    item: QueueItemOut = Field(description="The row's latest state (`cancelled` with `steeredInto` when admitted).")
    receipt: ReceiptOut | None = Field(description="The correction's receipt; null when no generation runs.")
    reason: RejectReason | None = Field(None, description="`generation_not_active` when idle (the row is left "
                                                          "intact), or the receipt's rejection reason.")
    started: RunResult | None = Field(None, description="agent/steerPrefix only: the generation its sendNow "
                                                        "started.")

    def wire(self) -> dict[str, object]:
        return _keep(super().wire(), "receipt")


class QueueSendNowResult(Result):
    item: QueueItemOut
    started: RunResult | None = Field(None, description="Present when the session was idle and the row started.")


class QueueItemResult(Result):
    item: QueueItemOut


class QueueEditParams(Params):
    task_id: TaskID
    text: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS, description="The new text.")
    expected_updated_at: Int64 = Field(description="The row's `updatedAt` as the client saw it; a row changed since "
                                                 "is a conflict (-32009).")


class SteerPrefixParams(Params):
    session_id: SessionID


class SteerPrefixResult(Result):
    results: list[QueueSteerResult] = Field(description="One entry per row acted on, in FIFO order; empty when "
                                                        "the first waiting row cannot be steered.")

    def wire(self) -> dict[str, object]:
        return {"results": [r.wire() for r in self.results]}


# --- notifications ----------------------------------------------------------------------------


class QueueChangedParams(Result):
    """The session's queue changed (added, edited, moved, steered, sent, cancelled, paused)."""

    session_id: str
    items: list[QueueItemOut] = Field(description="The whole queue, as agent/queue/list returns it.")


class ReceiptParams(Result):
    """A receipt changed: accepted, applied or rejected."""

    session_id: str
    receipt: ReceiptOut


__all__ = [
    "CLIENT_ID_PATTERN",
    "MAX_ATTACHMENTS",
    "QueueAddParams",
    "QueueAddResult",
    "QueueChangedParams",
    "QueueEditParams",
    "QueueItemOut",
    "QueueItemResult",
    "QueueListParams",
    "QueueListResult",
    "QueueSendNowResult",
    "QueueSteerResult",
    "QueueTaskParams",
    "ReceiptOut",
    "ReceiptParams",
    "SteerParams",
    "SteerPrefixParams",
    "SteerPrefixResult",
    "SteeringParams",
    "SteeringResult",
]
