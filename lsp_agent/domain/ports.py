"""The small Protocols through which the core talks to the outside.

Front ends (language server, headless CLI, tests) implement these; the core
never imports pygls, lsprotocol or httpx.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from enum import StrEnum
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from lsp_agent.domain.edits import ApplyResult, EditApplier, EditPlan
from lsp_agent.domain.events import SinkEvent
from lsp_agent.domain.history import Message, ReasoningPart, ToolCallPart, Usage

__all__ = [
    "ApplyResult",
    "AssistantReply",
    "Document",
    "DocumentSource",
    "EditApplier",
    "EditPlan",
    "EventSink",
    "ModelRequest",
    "NoSkills",
    "Provider",
    "ProviderError",
    "ProviderErrorKind",
    "ProviderEvent",
    "ReasoningDelta",
    "ReplyDone",
    "SkillsSource",
    "TextDelta",
    "ToolSpec",
    "Trace",
    "TraceOpener",
]


# --- model provider -------------------------------------------------------------------------


class ToolSpec(BaseModel):
    name: str
    description: str
    parameters: dict[str, Any]


class ModelRequest(BaseModel):
    """Everything a provider needs for one call. Static content first (prefix caching)."""

    model: str
    instructions: str
    tools: list[ToolSpec]
    messages: list[Message]
    # Harness reminders for this request only (never stored); appended after the history.
    tail: list[str] = Field(default_factory=list)
    reasoning_effort: str | None = None


class TextDelta(BaseModel):
    kind: Literal["text"] = "text"
    text: str


class ReasoningDelta(BaseModel):
    kind: Literal["reasoning"] = "reasoning"
    text: str


class AssistantReply(BaseModel):
    text: str = ""
    reasoning: list[ReasoningPart] = Field(default_factory=list)
    tool_calls: list[ToolCallPart] = Field(default_factory=list)
    #: None when the server reported no usage (shown as unknown, never as 0).
    usage: Usage | None = None
    response_id: str | None = None
    #: The model id the server said answered (its `model` field), which may differ from the one asked for.
    server_model: str | None = None
    #: Cut by the output-token limit (finish_reason "length", status "incomplete"): its
    #: tool calls may be partial and are never run.
    truncated: bool = False
    #: Provider remarks a user should see (e.g. switching to text-form tool calls).
    notes: list[str] = Field(default_factory=list)


class ReplyDone(BaseModel):
    kind: Literal["done"] = "done"
    reply: AssistantReply


ProviderEvent = TextDelta | ReasoningDelta | ReplyDone


class ProviderErrorKind(StrEnum):
    HTTP_STATUS = "http_status"
    CONNECTION = "connection"
    STREAM_CUT = "stream_cut"
    MALFORMED = "malformed"
    IDLE_TIMEOUT = "idle_timeout"
    CONFIG = "config"
    SCRIPT = "script"


class ProviderError(Exception):
    """A provider failure after its retries; the loop stops with reason `error`."""

    def __init__(self, kind: ProviderErrorKind, message: str, status: int | None = None,
                 attempts: int = 1) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.attempts = attempts

    def describe(self) -> str:
        status = f" HTTP {self.status}" if self.status is not None else ""
        return f"{self.kind.value}{status}: {self.message} (after {self.attempts} attempt(s))"


class Provider(Protocol):
    #: shown in every output; "scripted" for the test double.
    label: str
    scripted: bool

    def stream(self, request: ModelRequest, body: bytes | None = None) -> AsyncIterator[ProviderEvent]:
        """Yield deltas as they arrive, then exactly one ReplyDone, and end (the caller reads on to the
        end, so nothing slow belongs after the ReplyDone); raise ProviderError on failure.
        `body` is `encode_request(request)` when the caller already has it (encoded once per step)."""
        ...

    def encode_request(self, request: ModelRequest) -> bytes:
        """The exact bytes this provider sends for `request` (hashed for replay records)."""
        ...


# --- documents ------------------------------------------------------------------------------


class Document(BaseModel):
    text: str
    version: int | None = None
    source: Literal["buffer", "disk"] = "disk"


class DocumentSource(Protocol):
    async def read(self, path: str) -> Document | None:
        """The editor's open buffer for a workspace-relative path, else disk; None if absent."""
        ...


# --- events ---------------------------------------------------------------------------------


class EventSink(Protocol):
    def emit(self, event: SinkEvent) -> None:
        """Deliver one core event; must not block."""
        ...


# --- skills ---------------------------------------------------------------------------------


class SkillsSource(Protocol):
    def block(self) -> str:
        """The current list of project skills as the model reads it ("" when there are none).
        The loop announces a change as an appended message; the instructions never carry it."""
        ...


class NoSkills:
    def block(self) -> str:
        return ""


# --- run traces -----------------------------------------------------------------------------


class Trace(Protocol):
    """One generation's trace: per step the calls, arguments, bounded results and milliseconds."""

    def write(self, record: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


#: Opens the trace of (session ID, generation ID).
TraceOpener = Callable[[str, str], Trace]
