"""The conversation record: messages made of parts. Pure data, shared by every layer."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lsp_agent.domain import ids


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ErrorKind(StrEnum):
    """Classes of a failed tool call; each has its own next-step message."""

    INVALID_JSON = "invalid_json"
    PARAMETER_MISMATCH = "parameter_mismatch"
    UNKNOWN_TOOL = "unknown_tool"
    PATH_DENIED = "path_denied"
    TOOL_FAILURE = "tool_failure"
    TIMEOUT = "timeout"
    DENIED = "denied"
    CANCELLED = "cancelled"


#: per model class: the names of all its fields, one set shared by every instance (see `_share_fields_set`)
_ALL_FIELDS: dict[type[BaseModel], set[str]] = {}


def _share_fields_set(model: BaseModel) -> None:
    """Give `model` its class's shared set of all field names as its "fields set".

    pydantic keeps a set of the explicitly set fields in every instance: 216 bytes, 728 for a tool
    result's seven, more than the rest of a small part. History holds every message and part of a
    session (a 1,000-step run: 4,000 of them), and nothing reads which fields of a history record
    were set explicitly (`exclude_unset` is never used on them), so every field counts as set, in one
    set per class. pydantic only ever adds field names to this set (assignment), which this set
    already holds, and copies it before changing it otherwise (`model_copy`), so sharing it is safe."""
    cls = type(model)
    shared = _ALL_FIELDS.get(cls)
    if shared is None:
        shared = _ALL_FIELDS[cls] = set(cls.model_fields)
    object.__setattr__(model, "__pydantic_fields_set__", shared)


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(default_factory=ids.part_id)

    def model_post_init(self, context: Any, /) -> None:
        _share_fields_set(self)


class TextPart(_Part):
    type: Literal["text"] = "text"
    text: str
    # Harness-written text (reminders, notes) that is not the user's or model's own words.
    synthetic: bool = False
    # Facts a synthetic note records for the harness (e.g. `external_change`: paths).
    metadata: dict[str, Any] = Field(default_factory=dict)


class ReasoningPart(_Part):
    type: Literal["reasoning"] = "reasoning"
    text: str
    # Opaque provider data carried back on the next request (Responses API reasoning items).
    provider_item_id: str | None = None
    encrypted_content: str | None = None


class ToolCallPart(_Part):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: str


class ToolResultPart(_Part):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    ok: bool
    output: str
    error_kind: ErrorKind | None = None
    # Structured facts the harness derives state from (never from the model's words):
    # paths read/written, the verify envelope, command exit code.
    metadata: dict[str, Any] = Field(default_factory=dict)
    elapsed_ms: int = 0


Part = Annotated[TextPart | ReasoningPart | ToolCallPart | ToolResultPart, Field(discriminator="type")]


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache_read: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input=self.input + other.input,
            output=self.output + other.output,
            reasoning=self.reasoning + other.reasoning,
            cache_read=self.cache_read + other.cache_read,
        )


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(default_factory=ids.message_id)
    role: Role
    parts: list[Part] = Field(default_factory=list)
    generation: str | None = None
    step: int | None = None

    def model_post_init(self, context: Any, /) -> None:
        _share_fields_set(self)

    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]


#: TextPart metadata of a compaction summary or handoff note: the assistant turns it stands for.
REPLACED_TURNS = "replaced_assistant_turns"


def assistant_turns(messages: Iterable[Message]) -> int:
    """Assistant turns `messages` stand for: their own, plus what earlier summaries replaced."""
    turns = 0
    for message in messages:
        if message.role is Role.ASSISTANT:
            turns += 1
            continue
        for part in message.parts:
            if isinstance(part, TextPart) and part.synthetic:
                value = part.metadata.get(REPLACED_TURNS)
                turns += value if isinstance(value, int) else 0
    return turns
