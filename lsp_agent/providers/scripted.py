"""The scripted provider: a deterministic test double (and the demo's model).

It replays a fixed script of replies. Which reply comes next is derived from the
request itself (the number of assistant messages already in the history, plus the
assistant turns a compaction summary or handoff note says it replaced), so the
same history always gets the same reply. A reply with `when` answers instead any
request whose tail contains that text (the harness's compaction and handoff
requests carry such a marker) and does not count in the order. Labelled
"scripted" everywhere.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lsp_agent.domain import ids
from lsp_agent.domain.history import Message, ReasoningPart, Role, ToolCallPart, Usage, assistant_turns
from lsp_agent.domain.ports import (
    AssistantReply,
    ModelRequest,
    ProviderError,
    ProviderErrorKind,
    ProviderEvent,
    ReasoningDelta,
    ReplyDone,
    TextDelta,
)
from lsp_agent.settings.config import Settings


class ScriptedCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] | None = None
    #: the raw argument string, to script malformed JSON
    arguments_raw: str | None = None


class ScriptedError(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: ProviderErrorKind = ProviderErrorKind.HTTP_STATUS
    message: str = "scripted provider failure"
    status: int | None = 500


class ScriptedReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    usage: Usage | None = None
    #: pause before the reply starts streaming (tests of cancellation and steering)
    delay_ms: int = 0
    error: ScriptedError | None = None
    #: answer requests whose tail contains this text (e.g. "[lsp-agent compaction"), out of order
    when: str | None = None


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = "scripted"
    replies: list[ScriptedReply]
    #: replies past the end repeat the last one instead of ending the run
    repeat_last: bool = False
    #: answer HTTP 400, as OpenAI-style servers do, when a tool call is not answered right after its message
    reject_unanswered_calls: bool = False


EXHAUSTED = "[scripted] The script has no more replies."


def _chunks(text: str, size: int = 16) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


class ScriptedProvider:
    scripted = True

    def __init__(self, script: Script, record_requests: bool = False) -> None:
        self.script = script
        self.label = f"scripted ({script.label})" if script.label != "scripted" else "scripted"
        #: every request as the loop handed it over, when `record_requests` (tests and benchmarks)
        self.requests: list[ModelRequest] = []
        self._record = record_requests
        self._cache: dict[str, tuple[Message, str, int]] = {}

    @classmethod
    def from_file(cls, path: Path) -> ScriptedProvider:
        try:
            return cls(Script.model_validate_json(path.read_bytes()))
        except (OSError, ValidationError) as exc:
            raise ProviderError(ProviderErrorKind.SCRIPT, f"cannot load script {path}: {exc}") from exc

    @classmethod
    def from_settings(cls, settings: Settings) -> ScriptedProvider:
        if not settings.script:
            raise ProviderError(ProviderErrorKind.CONFIG,
                                "the scripted provider needs a script: pass --script FILE or set `script`")
        return cls.from_file(Path(settings.script))

    def reply_for(self, request: ModelRequest) -> ScriptedReply:
        if request.tail:
            tail = "\n".join(request.tail)
            for candidate in self.script.replies:
                if candidate.when is not None and candidate.when in tail:
                    return candidate
        index = assistant_turns(request.messages)
        replies = [r for r in self.script.replies if r.when is None]
        if index < len(replies):
            return replies[index]
        if self.script.repeat_last and replies:
            return replies[-1]
        return ScriptedReply(text=EXHAUSTED)

    def encode_request(self, request: ModelRequest) -> bytes:
        """`request.model_dump_json(exclude={"model"})`, byte for byte, with each message's JSON
        cached (history is append-only): re-dumping a 1,000-step history every step cost O(history)
        time and a burst of garbage per step."""
        head = request.model_dump_json(include={"instructions", "tools"})
        tail = request.model_dump_json(exclude={"model", "instructions", "tools", "messages"})  # fields after them
        messages = ",".join(self._message(m)[0] for m in request.messages)
        self._cache = {m.id: self._cache[m.id] for m in request.messages}  # drops what was compacted away
        return f'{head[:-1]},"messages":[{messages}],{tail[1:]}'.encode()

    def _message(self, message: Message) -> tuple[str, int]:
        """(the message's JSON, the summed JSON length of its parts), cached by id while it is the same object."""
        entry = self._cache.get(message.id)
        if entry is None or entry[0] is not message:
            entry = (message, message.model_dump_json(), sum(len(p.model_dump_json()) for p in message.parts))
            self._cache[message.id] = entry
        return entry[1], entry[2]

    def _estimate_usage(self, request: ModelRequest, reply: ScriptedReply) -> Usage:
        sent = len(request.instructions) + sum(len(t.description) + len(json.dumps(t.parameters))
                                               for t in request.tools)
        sent += sum(self._message(m)[1] for m in request.messages)
        return _usage(sent, reply)

    async def stream(self, request: ModelRequest, body: bytes | None = None) -> AsyncIterator[ProviderEvent]:
        if self._record:
            self.requests.append(request)
        if self.script.reject_unanswered_calls and (missing := unanswered_call(request.messages)):
            raise ProviderError(ProviderErrorKind.HTTP_STATUS,
                                f"400: an assistant message with tool_calls must be followed by tool messages "
                                f"answering each call; missing {missing}", 400)
        reply = self.reply_for(request)
        if reply.delay_ms:
            await asyncio.sleep(reply.delay_ms / 1000)
        if reply.error is not None:
            raise ProviderError(reply.error.kind, reply.error.message, reply.error.status)
        for n, piece in enumerate(_chunks(reply.reasoning)):
            yield ReasoningDelta(text=piece)
            if n % 32 == 31:
                await asyncio.sleep(0)  # yield to the event loop, as a network stream would
        for n, piece in enumerate(_chunks(reply.text)):
            yield TextDelta(text=piece)
            if n % 32 == 31:
                await asyncio.sleep(0)
        turn = assistant_turns(request.messages)
        calls = [
            ToolCallPart(call_id=f"call_{turn}_{n}", name=c.name,
                         arguments=c.arguments_raw if c.arguments_raw is not None
                         else json.dumps(c.arguments or {}, separators=(",", ":")))
            for n, c in enumerate(reply.tool_calls)
        ]
        usage = reply.usage or self._estimate_usage(request, reply)
        reasoning = [ReasoningPart(id=ids.part_id(), text=reply.reasoning)] if reply.reasoning else []
        yield ReplyDone(reply=AssistantReply(text=reply.text, reasoning=reasoning, tool_calls=calls, usage=usage))


def unanswered_call(messages: list[Message]) -> str | None:
    """The first call ID not answered by the tool messages right after its assistant message."""
    for n, message in enumerate(messages):
        calls = [c.call_id for c in message.tool_calls()] if message.role is Role.ASSISTANT else []
        answered: set[str] = set()
        for later in messages[n + 1:]:
            if later.role is not Role.TOOL:
                break
            answered.update(r.call_id for r in later.tool_results())
        missing = [c for c in calls if c not in answered]
        if missing:
            return missing[0]
    return None


def _usage(sent: int, reply: ScriptedReply) -> Usage:
    produced = len(reply.text) + sum(len(c.arguments_raw or json.dumps(c.arguments or {})) for c in reply.tool_calls)
    return Usage(input=sent // 4, output=max(1, produced // 4), reasoning=len(reply.reasoning) // 4)
