"""OpenAI-compatible Chat Completions over SSE (OpenAI, Ollama, vLLM, llama.cpp, DeepSeek, ...).

Tool calls arrive as fragments keyed by `index`, possibly interleaved across
calls; they are only assembled into ToolCallParts once `[DONE]` arrives. The
arguments stay the raw string the model produced: the controller parses them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Unpack

from lsp_agent.domain import ids
from lsp_agent.domain.history import (
    Message,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from lsp_agent.domain.ports import (
    AssistantReply,
    ModelRequest,
    ProviderErrorKind,
    ReasoningDelta,
    TextDelta,
)
from lsp_agent.providers.http_base import (
    HttpStreamingProvider,
    OpeningCache,
    ProviderOptions,
    ReplyAssembler,
    StreamProblem,
    WireCache,
    as_dict,
    as_int,
    body_opening,
    encode_json,
    find_error_message,
    join_body,
    load_event_object,
    server_model,
    valid_arguments,
)
from lsp_agent.providers.sse import SSEEvent
from lsp_agent.settings.config import ProviderConfig

__all__ = ["ChatAssembler", "ChatCompletionsProvider"]


class ChatCompletionsProvider(HttpStreamingProvider):
    """`POST {base}/chat/completions` with `stream: true` and usage in the last chunk.

    `send_reasoning` carries earlier reasoning back as `reasoning_content` on assistant
    messages, for the few servers that require it; off by default because most
    (DeepSeek's reasoner among them) reject or ignore it.
    """

    path = "/chat/completions"
    protocol = "chat"

    def __init__(self, config: ProviderConfig, *, send_reasoning: bool = False,
                 **options: Unpack[ProviderOptions]) -> None:
        super().__init__(config, **options)
        self.send_reasoning = send_reasoning
        self._wire = WireCache()
        self._opening = OpeningCache()

    def encode_request(self, request: ModelRequest) -> bytes:
        def opening() -> tuple[bytes, list[bytes]]:
            return body_opening(self._head(request), "messages"), [encode_json(m) for m in self._system(request)]

        start, system = self._opening.get((self.wire_model(request), self.max_output_tokens, request.instructions),
                                          request.tools, opening)
        items = [*system, *self._wire.encode(request.messages, self._map_message)]
        items += [encode_json(m) for m in self._tail(request)]
        return join_body(start, items, self._closing(request))

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The body as a dict (encode_request builds the same bytes incrementally)."""
        messages = self._system(request)
        for message in request.messages:
            messages.extend(self._map_message(message))
        messages += self._tail(request)
        return {**self._head(request), "messages": messages, **self._closing(request)}

    # Key order is part of the bytes: static first (limits, tools, system), the growing history
    # next, the one value that may change between calls (effort) last.
    def _head(self, request: ModelRequest) -> dict[str, Any]:
        head: dict[str, Any] = {
            "model": self.wire_model(request),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": self.max_output_tokens,
        }
        if self.sampling.temperature is not None:
            head["temperature"] = self.sampling.temperature
        if self.sampling.seed is not None:
            head["seed"] = self.sampling.seed
        if request.tools:
            head["tools"] = [
                {"type": "function",
                 "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in request.tools
            ]
        return head

    @staticmethod
    def _closing(request: ModelRequest) -> dict[str, Any]:
        return {"reasoning_effort": request.reasoning_effort} if request.reasoning_effort else {}

    @staticmethod
    def _system(request: ModelRequest) -> list[dict[str, Any]]:
        return [{"role": "system", "content": request.instructions}] if request.instructions else []

    @staticmethod
    def _tail(request: ModelRequest) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "\n\n".join(request.tail)}] if request.tail else []

    def new_assembler(self) -> ReplyAssembler:
        return ChatAssembler()

    def _map_message(self, message: Message) -> list[dict[str, Any]]:
        if message.role is Role.ASSISTANT:
            return self._map_assistant(message)
        out: list[dict[str, Any]] = []
        texts: list[str] = []

        def flush_text() -> None:
            if texts:
                out.append({"role": "user", "content": "\n\n".join(texts)})
                texts.clear()

        for part in message.parts:
            # Synthetic (harness-written) text goes out as ordinary user text.
            if isinstance(part, TextPart):
                texts.append(part.text)
            elif isinstance(part, ToolResultPart):
                flush_text()
                out.append({"role": "tool", "tool_call_id": part.call_id, "content": part.output})
        flush_text()
        return out

    def _map_assistant(self, message: Message) -> list[dict[str, Any]]:
        text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
        calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
        entry: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
        if self.send_reasoning:
            reasoning = "\n\n".join(p.text for p in message.parts if isinstance(p, ReasoningPart) and p.text)
            if reasoning:
                entry["reasoning_content"] = reasoning
        if calls:
            entry["tool_calls"] = [
                {"id": c.call_id, "type": "function",
                 "function": {"name": c.name, "arguments": valid_arguments(c.arguments)}}
                for c in calls
            ]
        out = [entry]
        out.extend({"role": "tool", "tool_call_id": p.call_id, "content": p.output}
                   for p in message.parts if isinstance(p, ToolResultPart))
        return out


@dataclass
class _CallBuffer:
    call_id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _malformed(message: str) -> StreamProblem:
    return StreamProblem(ProviderErrorKind.MALFORMED, message)


class ChatAssembler:
    """Accumulates Chat Completions chunks; the reply exists only after `[DONE]`."""

    terminal = "[DONE]"

    def __init__(self) -> None:
        self._finished = False
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _CallBuffer] = {}
        self._last_index: int | None = None
        self._usage: Usage | None = None
        self._response_id: str | None = None
        self._server_model: str | None = None
        self._finish_reason: str | None = None

    @property
    def finished(self) -> bool:
        return self._finished

    def feed(self, event: SSEEvent) -> list[TextDelta | ReasoningDelta]:
        if event.data.strip() == "[DONE]":
            self._finished = True
            return []
        chunk = load_event_object(event.data)
        if chunk.get("error"):
            raise StreamProblem(
                ProviderErrorKind.HTTP_STATUS,
                f"the server reported an error mid-stream: {find_error_message(chunk) or event.data}",
            )
        if isinstance(chunk.get("id"), str) and self._response_id is None:
            self._response_id = chunk["id"]
        if self._server_model is None:
            self._server_model = server_model(chunk.get("model"))
        if isinstance(chunk.get("usage"), dict):
            self._usage = _usage(chunk["usage"])
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise _malformed("`choices` is not a list")
        out: list[TextDelta | ReasoningDelta] = []
        for choice in choices:
            if not isinstance(choice, dict):
                raise _malformed("a choice is not an object")
            if choice.get("index", 0) != 0:
                continue  # only one completion is requested
            if isinstance(choice.get("finish_reason"), str):
                self._finish_reason = choice["finish_reason"]
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise _malformed("`delta` is not an object")
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                self._reasoning.append(reasoning)
                out.append(ReasoningDelta(text=reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                self._text.append(content)
                out.append(TextDelta(text=content))
            fragments = delta.get("tool_calls") or []
            if not isinstance(fragments, list):
                raise _malformed("`tool_calls` is not a list")
            for fragment in fragments:
                self._add_fragment(fragment)
        return out

    def _add_fragment(self, fragment: Any) -> None:
        if not isinstance(fragment, dict):
            raise _malformed("a tool call fragment is not an object")
        call_id = fragment.get("id") if isinstance(fragment.get("id"), str) and fragment.get("id") else None
        index = fragment.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = self._index_without_index(call_id)
        buffer = self._calls.setdefault(index, _CallBuffer())
        self._last_index = index
        if call_id and buffer.call_id is None:
            buffer.call_id = call_id
        function = fragment.get("function") or {}
        if not isinstance(function, dict):
            raise _malformed("a tool call's `function` is not an object")
        name = function.get("name")
        if isinstance(name, str) and name and name != buffer.name:
            # Servers send the name once; a few repeat it whole, none split it — but be exact.
            buffer.name = name if not buffer.name else buffer.name + name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            buffer.arguments.append(arguments)
        elif isinstance(arguments, dict):
            # A few servers send the parsed object instead of a string.
            buffer.arguments.append(json.dumps(arguments, ensure_ascii=False))

    def _index_without_index(self, call_id: str | None) -> int:
        """Servers that omit `index`: a new id opens a call, a fragment without id continues the last."""
        if call_id is not None:
            for index, buffer in self._calls.items():
                if buffer.call_id == call_id:
                    return index
            return max(self._calls, default=-1) + 1
        if self._last_index is not None:
            return self._last_index
        return 0

    def reply(self) -> AssistantReply:
        calls: list[ToolCallPart] = []
        for index in sorted(self._calls):
            buffer = self._calls[index]
            if not buffer.name:
                raise _malformed(f"tool call #{index} has no function name")
            calls.append(ToolCallPart(call_id=buffer.call_id or ids.new_id("call"), name=buffer.name,
                                      arguments="".join(buffer.arguments)))
        reasoning = "".join(self._reasoning)
        return AssistantReply(
            text="".join(self._text),
            reasoning=[ReasoningPart(text=reasoning)] if reasoning else [],
            tool_calls=calls,
            usage=self._usage,
            response_id=self._response_id,
            server_model=self._server_model,
            truncated=self._finish_reason == "length",
        )


def _usage(raw: dict[str, Any]) -> Usage:
    prompt_details = as_dict(raw.get("prompt_tokens_details"))
    completion_details = as_dict(raw.get("completion_tokens_details"))
    cached = as_int(prompt_details.get("cached_tokens")) or as_int(raw.get("prompt_cache_hit_tokens"))
    return Usage(
        input=as_int(raw.get("prompt_tokens")),
        output=as_int(raw.get("completion_tokens")),
        reasoning=as_int(completion_details.get("reasoning_tokens")),
        cache_read=cached,
    )
