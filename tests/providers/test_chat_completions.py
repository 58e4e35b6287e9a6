"""Chat Completions over a real loopback HTTP server: streaming, tool-call assembly, request bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lsp_agent.domain.history import (
    Message,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from lsp_agent.domain.ports import ProviderErrorKind, ReasoningDelta, ReplyDone, TextDelta, ToolSpec
from tests.providers.loopback import (
    LoopbackServer,
    ProviderFactory,
    Reply,
    chat_sse,
    collect,
    simple_request,
    split_every,
    splits_inside_a_character,
)


def delta(**fields: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def call(index: int, *, id: str | None = None, name: str | None = None, args: str = "") -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id:
        fragment["id"] = id
        fragment["type"] = "function"
    if name:
        fragment["function"]["name"] = name
    return fragment


STREAM = [
    delta(role="assistant", content=""),
    delta(reasoning_content="Thinking → "),
    delta(reasoning_content="über 🧠"),
    delta(content="Héllo "),
    delta(content="wörld 🎉 — 世界"),
    delta(tool_calls=[call(0, id="call_a", name="read_file", args='{"pa')]),
    delta(tool_calls=[call(1, id="call_b", name="search_code", args='{"qu')]),
    delta(tool_calls=[call(0, args='th": "src/ü.py"')]),
    delta(tool_calls=[call(1, args='ery": "naïve"')]),
    delta(tool_calls=[call(0, args="}"), call(1, args="}")]),
    {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    {"id": "chatcmpl-1", "choices": [], "usage": {
        "prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
        "prompt_tokens_details": {"cached_tokens": 1024},
        "completion_tokens_details": {"reasoning_tokens": 32}}},
]


async def test_streams_text_reasoning_and_two_interleaved_tool_calls_split_anywhere(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    chunks = split_every(chat_sse(STREAM), 7)
    assert splits_inside_a_character(chunks)
    server.queue(Reply(chunks=chunks))
    provider = make_provider("chat", server.url)

    events, error = await collect(provider, simple_request())

    assert error is None
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Héllo wörld 🎉 — 世界"
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Thinking → über 🧠"
    assert isinstance(events[-1], ReplyDone)
    assert sum(isinstance(e, ReplyDone) for e in events) == 1
    reply = events[-1].reply
    assert reply.text == "Héllo wörld 🎉 — 世界"
    assert [p.text for p in reply.reasoning] == ["Thinking → über 🧠"]
    assert [(c.call_id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_a", "read_file", '{"path": "src/ü.py"}'),
        ("call_b", "search_code", '{"query": "naïve"}'),
    ]
    assert reply.usage == Usage(input=1200, output=80, reasoning=32, cache_read=1024)
    assert reply.response_id == "chatcmpl-1"
    assert provider.last_attempts == 1
    sent = server.requests[0]
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.json()["stream"] is True
    assert sent.json()["stream_options"] == {"include_usage": True}
    assert sent.headers["accept"] == "text/event-stream"


async def test_reasoning_field_named_reasoning_is_read_too(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[chat_sse([delta(reasoning="hmm"), delta(content="ok")])]))
    events, error = await collect(make_provider("chat", server.url), simple_request())
    assert error is None
    assert isinstance(events[-1], ReplyDone)
    assert [p.text for p in events[-1].reply.reasoning] == ["hmm"]


async def test_tool_calls_without_index_are_keyed_by_id(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    fragments = [
        {"id": "c1", "function": {"name": "a", "arguments": "{}"}},
        {"id": "c2", "function": {"name": "b", "arguments": '{"x"'}},
        {"function": {"arguments": ":1}"}},
    ]
    server.queue(Reply(chunks=[chat_sse([delta(tool_calls=[f]) for f in fragments])]))
    events, error = await collect(make_provider("chat", server.url), simple_request())
    assert error is None
    assert isinstance(events[-1], ReplyDone)
    assert [(c.call_id, c.name, c.arguments) for c in events[-1].reply.tool_calls] == [
        ("c1", "a", "{}"), ("c2", "b", '{"x":1}')]


def history_request(**overrides: Any) -> Any:
    tools = [ToolSpec(name=n, description=f"tool {n}", parameters={"type": "object", "properties": {}})
             for n in ("read_file", "apply_patch", "verify_project")]
    messages = [
        Message(role=Role.USER, parts=[TextPart(text="Fix the bug in é.py")]),
        Message(role=Role.ASSISTANT, parts=[
            ReasoningPart(text="private thoughts"),
            TextPart(text="Reading it."),
            ToolCallPart(call_id="call_1", name="read_file", arguments='{"path":"é.py"}'),
        ]),
        Message(role=Role.TOOL, parts=[ToolResultPart(call_id="call_1", name="read_file", ok=True,
                                                      output="OK: 3 lines")]),
        Message(role=Role.USER, parts=[TextPart(text="[note] file changed", synthetic=True)]),
    ]
    fields: dict[str, Any] = {"tools": tools, "messages": messages, "tail": ["Reminder: verify."],
                              "reasoning_effort": "high"}
    return simple_request(**{**fields, **overrides})


async def test_request_body_maps_history_in_order_with_stable_bytes(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    ok = chat_sse([delta(content="ok")])
    server.queue(Reply(chunks=[ok]), Reply(chunks=[ok]))
    provider = make_provider("chat", server.url)
    request = history_request()

    for _ in range(2):
        _, error = await collect(provider, request)
        assert error is None

    first, second = server.requests
    assert first.body == second.body == provider.encode_request(request)
    body = first.json()
    assert list(body) == ["model", "stream", "stream_options", "max_tokens", "tools", "messages", "reasoning_effort"]
    assert body["model"] == "test-model"
    assert body["reasoning_effort"] == "high"
    assert [t["function"]["name"] for t in body["tools"]] == ["read_file", "apply_patch", "verify_project"]
    assert body["tools"][0] == {"type": "function", "function": {
        "name": "read_file", "description": "tool read_file",
        "parameters": {"type": "object", "properties": {}}}}
    assert body["messages"] == [
        {"role": "system", "content": "You are a test."},
        {"role": "user", "content": "Fix the bug in é.py"},
        {"role": "assistant", "content": "Reading it.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path":"é.py"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "OK: 3 lines"},
        {"role": "user", "content": "[note] file changed"},
        {"role": "user", "content": "Reminder: verify."},
    ]
    # Compact separators, raw UTF-8 (no \\u escapes).
    assert b'"role":"system"' in first.body
    assert "é.py".encode() in first.body


async def test_the_tail_extends_the_previous_request_only_at_the_end(
        make_provider: ProviderFactory) -> None:
    provider = make_provider("chat", "http://127.0.0.1:9/v1")
    without_tail = provider.encode_request(history_request(tail=[], reasoning_effort=None))
    with_tail = provider.encode_request(history_request(reasoning_effort=None))
    # Everything up to the closing brackets of the history is shared byte for byte.
    assert with_tail.startswith(without_tail[:-2])


async def test_reasoning_is_sent_back_only_when_asked(make_provider: ProviderFactory) -> None:
    plain = make_provider("chat", "http://127.0.0.1:9/v1")
    carrying = make_provider("chat", "http://127.0.0.1:9/v1", send_reasoning=True)
    assert b"private thoughts" not in plain.encode_request(history_request())
    assistant = json.loads(carrying.encode_request(history_request()))["messages"][2]
    assert assistant["reasoning_content"] == "private thoughts"


async def test_authorization_header_follows_the_environment(
        server: LoopbackServer, make_provider: ProviderFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    ok = chat_sse([delta(content="ok")])
    server.queue(Reply(chunks=[ok]), Reply(chunks=[ok]))
    provider = make_provider("chat", server.url, headers={"X-Extra": "1"})

    await collect(provider, simple_request())
    monkeypatch.setenv("LSP_AGENT_TEST_KEY", "sk-test-123")
    await collect(provider, simple_request())

    without, with_key = server.requests
    assert "authorization" not in without.headers
    assert with_key.headers["authorization"] == "Bearer sk-test-123"
    assert without.headers["x-extra"] == with_key.headers["x-extra"] == "1"
    assert "sk-test-123" not in repr(provider.__dict__)


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:99999/v1", "ftp://127.0.0.1/v1", "127.0.0.1:8080/v1"])
async def test_a_base_url_no_request_can_use_is_a_config_error_at_once(make_provider: ProviderFactory,
                                                                       base_url: str) -> None:
    events, error = await collect(make_provider("chat", base_url), simple_request())
    assert events == [] and error is not None
    assert (error.kind, error.attempts) == (ProviderErrorKind.CONFIG, 1)
    assert error.message.startswith(f"bad provider base URL {base_url!r}")
