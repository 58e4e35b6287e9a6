"""Typed events the loop emits. The headless `--json` lines and the LSP `agent/event`
notifications carry exactly these shapes (names follow opencode's `run --format json`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field

from lsp_agent.domain.wire import WireModel


class StopReason(StrEnum):
    FINAL = "final"
    STEP_LIMIT = "step_limit"
    CANCELLED = "cancelled"
    ERROR = "error"
    LOOP = "loop"
    #: the run handed off to a fresh session (same failure again and again); `handoffTo` names it
    HANDOFF = "handoff"


class VerificationStatus(StrEnum):
    VERIFIED = "verified"
    FAILED = "failed"
    NOT_RUN = "not_run"


class Tokens(WireModel):
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache: dict[str, int] = Field(default_factory=lambda: {"read": 0, "write": 0})
    #: Some reply came without usage from the server: the counts are unknown (or incomplete), not 0.
    unknown: bool = False


class _Event(WireModel):
    session_id: str
    generation: str


class StepStart(_Event):
    type: Literal["step_start"] = "step_start"
    step: int
    max_steps: int


class TextDeltaEvent(_Event):
    type: Literal["text_delta"] = "text_delta"
    part_id: str
    delta: str


class ReasoningDeltaEvent(_Event):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    part_id: str
    delta: str


class TextPartInfo(WireModel):
    id: str
    message_id: str
    text: str


class TextEvent(_Event):
    type: Literal["text"] = "text"
    part: TextPartInfo


class ReasoningEvent(_Event):
    type: Literal["reasoning"] = "reasoning"
    part: TextPartInfo


class ToolState(WireModel):
    status: Literal["running", "completed", "error"]
    input: dict[str, Any] | str
    output: str | None = None
    error_kind: str | None = None
    elapsed_ms: int | None = None
    metadata: dict[str, Any] | None = None


class ToolPartInfo(WireModel):
    id: str
    message_id: str
    call_id: str
    tool: str
    state: ToolState


class ToolStart(_Event):
    type: Literal["tool_start"] = "tool_start"
    step: int
    part: ToolPartInfo


class ToolUse(_Event):
    type: Literal["tool_use"] = "tool_use"
    step: int
    part: ToolPartInfo


class StepFinishInfo(WireModel):
    id: str
    step: int
    #: "length": the reply was cut by the output-token limit (its calls were not run).
    reason: Literal["tool-calls", "stop", "length"]
    tokens: Tokens
    server_model: str | None = Field(
        None, description="The model id the provider's reply named (OpenAI-style `model`), when it named one; "
                          "it can differ from the model asked for (an alias, a dated snapshot, a router).")


class StepFinish(_Event):
    type: Literal["step_finish"] = "step_finish"
    part: StepFinishInfo


class ErrorInfo(WireModel):
    kind: str
    message: str
    status: int | None = None


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    error: ErrorInfo


class NoticeEvent(_Event):
    """Harness notices a user should see: loop-guard warnings, folds, compactions, repairs."""

    type: Literal["notice"] = "notice"
    kind: str
    message: str
    data: dict[str, Any] | None = None


class Citation(WireModel):
    """Where a part is stored: the `evidence` block of a skill proposal, verbatim."""

    session_id: str
    message_id: str
    part_id: str


class InvalidatedBy(WireModel):
    """The write that made the last check stale: a downgrade always says why, so a user can tell an
    edit of the agent from a change of their own."""

    paths: list[str]
    by: Literal["agent_tool", "command", "outside_process"] = Field(
        description="`agent_tool` (an edit tool of the agent), `command` (a program the harness ran changed the "
                    "files: run_command or verify_project), `outside_process` (a change seen from outside the "
                    "agent: the user in the editor or another program — by the language server's watcher, or "
                    "by a headless run (CLI, ACP, eval) comparing the workspace with its latest check before "
                    "it ends).")
    step: int | None = None
    tool: str | None = None


class RunFinish(_Event):
    type: Literal["run_finish"] = "run_finish"
    stop_reason: StopReason = Field(
        description="`final` (the model answered without calls), `step_limit`, `cancelled` (by the user, a "
                    "signal or a closed output), `error`, `loop` (the loop guard tripped), `handoff` (the same "
                    "check failed the same way too often: the work goes on in the fresh session `handoffTo`; "
                    "the editor starts it, a headless run continues there within its step budget).")
    verification: VerificationStatus
    verification_part_id: str | None = None
    verification_citation: Citation | None = Field(
        None, description="`{sessionID, messageID, partID}` of the verify_project result the status was "
                          "derived from: paste it as a skill proposal's `evidence`.")
    verification_reason: str | None = Field(
        None, description="Why the status is `not_run` although a check had stood: names the write, who made it "
                          "and when.")
    invalidated_by: InvalidatedBy | None = None
    steps: int
    tool_calls: int
    tool_errors: int
    tokens: Tokens
    files_changed: list[str]
    model: str
    scripted: bool
    error: ErrorInfo | None = None
    handoff_to: str | None = Field(None, description="With stop reason `handoff`: the fresh session that "
                                                     "continues the work.")
    previous_session_ids: list[str] | None = Field(
        None, alias="previousSessionIDs",
        description="Sessions this run worked in before `sessionID`, oldest first (headless runs continue after a "
                    "handoff); the counts and tokens cover all of them.")


class ReceiptEvent(WireModel):
    """A steering receipt changed (accepted, applied, rejected): `agent/receipt` in the editor."""

    type: Literal["receipt"] = "receipt"
    session_id: str
    receipt: dict[str, Any]


class QueueChangedEvent(WireModel):
    """The session's follow-up queue changed: `agent/queueChanged` in the editor."""

    type: Literal["queue_changed"] = "queue_changed"
    session_id: str
    items: list[dict[str, Any]]


Event = Annotated[
    StepStart | TextDeltaEvent | ReasoningDeltaEvent | TextEvent | ReasoningEvent | ToolStart | ToolUse
    | StepFinish | ErrorEvent | NoticeEvent | RunFinish,
    Field(discriminator="type"),
]

#: Everything the core hands an EventSink: the loop's events, steering receipts and queue changes.
SinkEvent = (StepStart | TextDeltaEvent | ReasoningDeltaEvent | TextEvent | ReasoningEvent | ToolStart | ToolUse
             | StepFinish | ErrorEvent | NoticeEvent | RunFinish | ReceiptEvent | QueueChangedEvent)

#: Events that carry partial text; a line-oriented stream (CLI --json) skips them.
DELTA_TYPES = frozenset({"text_delta", "reasoning_delta", "tool_start"})
