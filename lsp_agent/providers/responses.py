"""OpenAI Responses API over SSE, used statelessly.

Every call sends the full input with `store: false`; `previous_response_id` is
never used. Reasoning items come back with `encrypted_content` (requested via
`include`) and are replayed in the next input so the model keeps its chain of
thought across tool calls. Their `rs_...` ids are kept in the history but not
sent: with `store: false` the server cannot resolve them and rejects the item.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Unpack

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

__all__ = ["ResponsesAssembler", "ResponsesProvider"]


class ResponsesProvider(HttpStreamingProvider):
    """`POST {base}/responses`, stateless.

    `reasoning_items` asks for reasoning summaries and encrypted reasoning content
    (`include: ["reasoning.encrypted_content"]`); turn it off for models without
    reasoning, which reject that include.
    """

    path = "/responses"
    protocol = "responses"

    def __init__(self, config: ProviderConfig, *, reasoning_items: bool = True,
                 **options: Unpack[ProviderOptions]) -> None:
        super().__init__(config, **options)
        self.reasoning_items = reasoning_items
        self._wire = WireCache()
        self._opening = OpeningCache()

    def encode_request(self, request: ModelRequest) -> bytes:
        def opening() -> tuple[bytes, list[bytes]]:
            return body_opening(self._head(request), "input"), []

        start, _ = self._opening.get((self.wire_model(request), self.max_output_tokens, self.reasoning_items,
                                      request.instructions), request.tools, opening)
        items = [*self._wire.encode(request.messages, self._map_message), *map(encode_json, self._tail(request))]
        return join_body(start, items, self._closing(request))

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The body as a dict (encode_request builds the same bytes incrementally)."""
        items: list[dict[str, Any]] = []
        for message in request.messages:
            items.extend(self._map_message(message))
        items += self._tail(request)
        return {**self._head(request), "input": items, **self._closing(request)}

    # Static fields first, the growing input next, the effort (may change) last.
    def _head(self, request: ModelRequest) -> dict[str, Any]:
        head: dict[str, Any] = {"model": self.wire_model(request), "stream": True, "store": False,
                                "max_output_tokens": self.max_output_tokens}
        if self.sampling.temperature is not None:
            head["temperature"] = self.sampling.temperature
        if self.reasoning_items:
            head["include"] = ["reasoning.encrypted_content"]
        if request.instructions:
            head["instructions"] = request.instructions
        if request.tools:
            head["tools"] = [
                {"type": "function", "name": t.name, "description": t.description,
                 "parameters": t.parameters, "strict": False}
                for t in request.tools
            ]
        return head

    def _closing(self, request: ModelRequest) -> dict[str, Any]:
        reasoning: dict[str, Any] = {}
        if request.reasoning_effort:
            reasoning["effort"] = request.reasoning_effort
        if self.reasoning_items:
            reasoning["summary"] = "auto"
        return {"reasoning": reasoning} if reasoning else {}

    @staticmethod
    def _tail(request: ModelRequest) -> list[dict[str, Any]]:
        return [_user_item("\n\n".join(request.tail))] if request.tail else []

    def new_assembler(self) -> ReplyAssembler:
        return ResponsesAssembler()

    def _map_message(self, message: Message) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        texts: list[str] = []
        assistant = message.role is Role.ASSISTANT

        def flush_text() -> None:
            if texts:
                if assistant:
                    out.append({"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": "".join(texts)}]})
                else:
                    out.append(_user_item("\n\n".join(texts)))
                texts.clear()

        for part in message.parts:
            if isinstance(part, TextPart):
                texts.append(part.text)
                continue
            flush_text()
            if isinstance(part, ReasoningPart) and assistant:
                # Without encrypted content a reasoning item could only be a server-side
                # reference, which `store: false` cannot resolve: leave it out.
                if part.encrypted_content:
                    summary = [{"type": "summary_text", "text": part.text}] if part.text else []
                    out.append({"type": "reasoning", "summary": summary,
                                "encrypted_content": part.encrypted_content})
            elif isinstance(part, ToolCallPart) and assistant:
                out.append({"type": "function_call", "call_id": part.call_id, "name": part.name,
                            "arguments": valid_arguments(part.arguments)})
            elif isinstance(part, ToolResultPart):
                out.append({"type": "function_call_output", "call_id": part.call_id, "output": part.output})
        flush_text()
        return out


def _user_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _problem(message: str) -> StreamProblem:
    return StreamProblem(ProviderErrorKind.MALFORMED, message)


@dataclass
class _Item:
    type: str
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    text: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    final_arguments: str | None = None
    summary_index: int | None = None
    done: dict[str, Any] | None = None


class ResponsesAssembler:
    """Accumulates Responses events by output index; the reply exists after response.completed."""

    terminal = "response.completed"

    def __init__(self) -> None:
        self._finished = False
        self._items: dict[int, _Item] = {}
        self._by_id: dict[str, int] = {}
        self._final_output: list[Any] = []
        self._usage: Usage | None = None
        self._response_id: str | None = None
        self._server_model: str | None = None
        self._incomplete = False

    @property
    def finished(self) -> bool:
        return self._finished

    def feed(self, event: SSEEvent) -> list[TextDelta | ReasoningDelta]:
        data = load_event_object(event.data)
        kind = data.get("type") if isinstance(data.get("type"), str) else event.event
        if kind in ("response.created", "response.in_progress"):
            self._note_response(data.get("response"))
        elif kind == "response.output_item.added":
            self._item_added(data)
        elif kind == "response.output_item.done":
            item = self._item_for(data, create_from=data.get("item"))
            item.done = as_dict(data.get("item")) or None
        elif kind == "response.output_text.delta":
            delta = self._delta(data)
            self._item_for(data, default_type="message").text.append(delta)
            return [TextDelta(text=delta)] if delta else []
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._reasoning_delta(data)
        elif kind == "response.function_call_arguments.delta":
            self._item_for(data, default_type="function_call").arguments.append(self._delta(data))
        elif kind == "response.function_call_arguments.done":
            arguments = data.get("arguments")
            if isinstance(arguments, str):
                self._item_for(data, default_type="function_call").final_arguments = arguments
        elif kind in ("response.completed", "response.incomplete"):
            # `incomplete` (e.g. max_output_tokens) is also terminal; only complete items are used.
            self._finish(data.get("response"))
        elif kind == "response.failed":
            response = as_dict(data.get("response"))
            detail = find_error_message(response) or "no detail given"
            raise StreamProblem(ProviderErrorKind.HTTP_STATUS, f"the response failed: {detail}")
        elif kind == "error":
            detail = find_error_message(data) or event.data
            raise StreamProblem(ProviderErrorKind.HTTP_STATUS,
                                f"the server reported an error mid-stream: {detail}")
        # Other events (content_part.added, *.done duplicates, annotations, ...) carry nothing new.
        return []

    # --- events -------------------------------------------------------------------------------

    def _note_response(self, response: Any) -> None:
        response = as_dict(response)
        if isinstance(response.get("id"), str):
            self._response_id = response["id"]
        self._server_model = server_model(response.get("model")) or self._server_model

    def _finish(self, response: Any) -> None:
        response = as_dict(response)
        self._note_response(response)
        reason = as_dict(response.get("incomplete_details")).get("reason")
        self._incomplete = response.get("status") == "incomplete" and reason in (None, "max_output_tokens")
        output = response.get("output")
        self._final_output = output if isinstance(output, list) else []
        usage = response.get("usage")
        if isinstance(usage, dict):
            self._usage = _usage(usage)
        self._finished = True

    def _item_added(self, data: dict[str, Any]) -> None:
        raw = data.get("item")
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            raise _problem("output_item.added without an item type")
        self._item_for(data, create_from=raw)

    def _item_for(self, data: dict[str, Any], *, create_from: Any = None,
                  default_type: str = "unknown") -> _Item:
        index = data.get("output_index")
        if not isinstance(index, int) or isinstance(index, bool):
            # Lenient servers (llama.cpp) omit output_index; the item id still names the item,
            # and an item announced by id alone takes the next free index.
            item_id = _str(data.get("item_id")) or _str(as_dict(create_from).get("id"))
            index = self._by_id.get(item_id or "")
            if index is None and item_id is not None and create_from is not None:
                index = max(self._items, default=-1) + 1
            if index is None:
                raise _problem(f"{data.get('type')} event without an integer output_index or a known item id")
        item = self._items.get(index)
        if item is None:
            raw = as_dict(create_from)
            item = _Item(
                type=_str(raw.get("type")) or default_type,
                id=_str(raw.get("id")) or _str(data.get("item_id")),
                call_id=_str(raw.get("call_id")),
                name=_str(raw.get("name")),
            )
            self._items[index] = item
            if item.id:
                self._by_id[item.id] = index
        return item

    @staticmethod
    def _delta(data: dict[str, Any]) -> str:
        delta = data.get("delta")
        if not isinstance(delta, str):
            raise _problem(f"{data.get('type')} event without a string delta")
        return delta

    def _reasoning_delta(self, data: dict[str, Any]) -> list[TextDelta | ReasoningDelta]:
        item = self._item_for(data, default_type="reasoning")
        delta = self._delta(data)
        index = data.get("summary_index")
        if isinstance(index, int) and item.summary_index is not None and index != item.summary_index:
            delta = "\n\n" + delta  # a new summary part starts a new paragraph
        if isinstance(index, int):
            item.summary_index = index
        item.text.append(delta)
        return [ReasoningDelta(text=delta)] if delta else []

    # --- reply --------------------------------------------------------------------------------

    def reply(self) -> AssistantReply:
        indexes = sorted(set(self._items) | set(range(len(self._final_output))))
        text: list[str] = []
        reasoning: list[ReasoningPart] = []
        calls: list[ToolCallPart] = []
        for index in indexes:
            streamed = self._items.get(index)
            final = as_dict(self._final_output[index]) if index < len(self._final_output) else {}
            raw = final or (streamed.done if streamed and streamed.done else {})
            kind = raw.get("type") or (streamed.type if streamed else None)
            if kind == "message":
                text.append(_message_text(raw) if raw else "".join(streamed.text if streamed else []))
            elif kind == "reasoning":
                part = _reasoning_part(raw, streamed)
                if part is not None:
                    reasoning.append(part)
            elif kind == "function_call":
                call = _function_call(raw, streamed)
                if call is not None:
                    calls.append(call)
        return AssistantReply(text="".join(text), reasoning=reasoning, tool_calls=calls,
                              usage=self._usage, response_id=self._response_id, truncated=self._incomplete,
                              server_model=self._server_model)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _message_text(raw: dict[str, Any]) -> str:
    content = raw.get("content")
    if not isinstance(content, list):
        return ""
    pieces = []
    for entry in content:
        entry = as_dict(entry)
        if entry.get("type") == "output_text" and isinstance(entry.get("text"), str):
            pieces.append(entry["text"])
        elif entry.get("type") == "refusal" and isinstance(entry.get("refusal"), str):
            pieces.append(entry["refusal"])
    return "".join(pieces)


def _texts(entries: Any) -> list[str]:
    if not isinstance(entries, list):
        return []
    return [e["text"] for e in entries if isinstance(e, dict) and isinstance(e.get("text"), str) and e["text"]]


def _reasoning_part(raw: dict[str, Any], streamed: _Item | None) -> ReasoningPart | None:
    summary = _texts(raw.get("summary")) or _texts(raw.get("content"))
    text = "\n\n".join(summary) if summary else "".join(streamed.text if streamed else [])
    encrypted = _str(raw.get("encrypted_content"))
    item_id = _str(raw.get("id")) or (streamed.id if streamed else None)
    if not text and not encrypted:
        return None
    return ReasoningPart(text=text, provider_item_id=item_id, encrypted_content=encrypted)


def _function_call(raw: dict[str, Any], streamed: _Item | None) -> ToolCallPart | None:
    if raw:
        call_id, name, arguments = _str(raw.get("call_id")), _str(raw.get("name")), raw.get("arguments")
        if call_id is None or name is None or not isinstance(arguments, str):
            raise _problem("a function_call item lacks call_id, name or arguments")
        return ToolCallPart(call_id=call_id, name=name, arguments=arguments)
    if streamed is None or streamed.final_arguments is None:
        return None  # never completed: a partial call is dropped, not guessed
    if streamed.call_id is None or streamed.name is None:
        raise _problem("a function call lacks call_id or name")
    return ToolCallPart(call_id=streamed.call_id, name=streamed.name, arguments=streamed.final_arguments)


def _usage(raw: dict[str, Any]) -> Usage:
    return Usage(
        input=as_int(raw.get("input_tokens")),
        output=as_int(raw.get("output_tokens")),
        reasoning=as_int(as_dict(raw.get("output_tokens_details")).get("reasoning_tokens")),
        cache_read=as_int(as_dict(raw.get("input_tokens_details")).get("cached_tokens")),
    )
