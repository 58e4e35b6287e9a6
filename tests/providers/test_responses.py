"""Responses API over a real loopback HTTP server: events, reasoning items carried back, stateless bodies."""

from __future__ import annotations

import json
from typing import Any

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
    ProviderErrorKind,
    ReasoningDelta,
    ReplyDone,
    TextDelta,
    ToolSpec,
)
from tests.providers.loopback import (
    LoopbackServer,
    ProviderFactory,
    Reply,
    collect,
    responses_sse,
    simple_request,
    split_every,
    splits_inside_a_character,
)


def ev(type_: str, **fields: Any) -> dict[str, Any]:
    return {"type": type_, **fields}


def fc_item(call_id: str, name: str, item_id: str, arguments: str = "") -> dict[str, Any]:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
            "arguments": arguments, "status": "completed" if arguments else "in_progress"}


REASONING_DONE = {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAA-enc-1",
                  "summary": [{"type": "summary_text", "text": "Plan → read"},
                              {"type": "summary_text", "text": "then fix ü"}]}
MESSAGE_DONE = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "Lecture du fichier 📄", "annotations": []}]}
CALL_A = fc_item("call_a", "read_file", "fc_a", '{"path":"ü.py"}')
CALL_B = fc_item("call_b", "search_code", "fc_b", '{"query":"naïve"}')
USAGE = {"input_tokens": 2000, "input_tokens_details": {"cached_tokens": 1536},
         "output_tokens": 120, "output_tokens_details": {"reasoning_tokens": 64}, "total_tokens": 2120}

EVENTS = [
    ev("response.created", response={"id": "resp_1", "status": "in_progress", "output": []}),
    ev("response.output_item.added", output_index=0,
       item={"type": "reasoning", "id": "rs_1", "summary": []}),
    ev("response.reasoning_summary_part.added", item_id="rs_1", output_index=0, summary_index=0),
    ev("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, summary_index=0,
       delta="Plan → "),
    ev("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, summary_index=0,
       delta="read"),
    ev("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, summary_index=1,
       delta="then fix ü"),
    ev("response.output_item.done", output_index=0, item=REASONING_DONE),
    ev("response.output_item.added", output_index=1,
       item={"type": "message", "id": "msg_1", "role": "assistant", "content": []}),
    ev("response.output_text.delta", item_id="msg_1", output_index=1, content_index=0, delta="Lecture "),
    ev("response.output_text.delta", item_id="msg_1", output_index=1, content_index=0,
       delta="du fichier 📄"),
    ev("response.output_item.done", output_index=1, item=MESSAGE_DONE),
    ev("response.output_item.added", output_index=2, item=fc_item("call_a", "read_file", "fc_a")),
    ev("response.output_item.added", output_index=3, item=fc_item("call_b", "search_code", "fc_b")),
    ev("response.function_call_arguments.delta", item_id="fc_a", output_index=2, delta='{"pa'),
    ev("response.function_call_arguments.delta", item_id="fc_b", output_index=3, delta='{"que'),
    ev("response.function_call_arguments.delta", item_id="fc_a", output_index=2, delta='th":"ü.py"}'),
    ev("response.function_call_arguments.delta", item_id="fc_b", output_index=3, delta='ry":"naïve"}'),
    ev("response.function_call_arguments.done", item_id="fc_a", output_index=2,
       arguments='{"path":"ü.py"}'),
    ev("response.function_call_arguments.done", item_id="fc_b", output_index=3,
       arguments='{"query":"naïve"}'),
    ev("response.output_item.done", output_index=2, item=CALL_A),
    ev("response.output_item.done", output_index=3, item=CALL_B),
    ev("response.completed", response={"id": "resp_1", "status": "completed",
                                       "output": [REASONING_DONE, MESSAGE_DONE, CALL_A, CALL_B],
                                       "usage": USAGE}),
]


async def test_streams_reasoning_text_and_two_interleaved_function_calls_split_anywhere(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    chunks = split_every(responses_sse(EVENTS), 13)
    assert splits_inside_a_character(chunks)
    server.queue(Reply(chunks=chunks))
    provider = make_provider("responses", server.url)

    events, error = await collect(provider, simple_request())

    assert error is None
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Lecture du fichier 📄"
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Plan → read\n\nthen fix ü"
    assert isinstance(events[-1], ReplyDone)
    assert sum(isinstance(e, ReplyDone) for e in events) == 1
    reply = events[-1].reply
    assert reply.text == "Lecture du fichier 📄"
    assert [(r.text, r.provider_item_id, r.encrypted_content) for r in reply.reasoning] == [
        ("Plan → read\n\nthen fix ü", "rs_1", "gAAAA-enc-1")]
    assert [(c.call_id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_a", "read_file", '{"path":"ü.py"}'), ("call_b", "search_code", '{"query":"naïve"}')]
    assert reply.usage == Usage(input=2000, output=120, reasoning=64, cache_read=1536)
    assert reply.response_id == "resp_1"
    assert server.requests[0].path == "/v1/responses"


async def test_deltas_alone_are_enough_when_the_completed_event_has_no_output(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    events = [e for e in EVENTS if e["type"] != "response.output_item.done"]
    events[-1] = ev("response.completed", response={"id": "resp_2", "usage": USAGE})
    server.queue(Reply(chunks=[responses_sse(events)]))

    got, error = await collect(make_provider("responses", server.url), simple_request())

    assert error is None
    assert isinstance(got[-1], ReplyDone)
    reply = got[-1].reply
    assert reply.text == "Lecture du fichier 📄"
    assert [c.arguments for c in reply.tool_calls] == ['{"path":"ü.py"}', '{"query":"naïve"}']
    assert reply.reasoning[0].encrypted_content is None


def assistant_message(reply: AssistantReply) -> Message:
    """What the loop stores for a reply: reasoning, text, then tool calls."""
    parts: list[Any] = [*reply.reasoning, TextPart(text=reply.text), *reply.tool_calls]
    return Message(role=Role.ASSISTANT, parts=parts)


async def test_reasoning_items_are_carried_back_statelessly(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[responses_sse(EVENTS)]),
                 Reply(chunks=[responses_sse([ev("response.output_text.delta", output_index=0,
                                                 delta="done"),
                                              ev("response.completed", response={"id": "resp_2"})])]))
    provider = make_provider("responses", server.url)
    tools = [ToolSpec(name=n, description=f"tool {n}", parameters={"type": "object"})
             for n in ("read_file", "search_code", "verify_project")]
    first_request = simple_request(tools=tools, reasoning_effort="high")
    events, error = await collect(provider, first_request)
    assert error is None and isinstance(events[-1], ReplyDone)
    reply = events[-1].reply

    results = Message(role=Role.TOOL, parts=[
        ToolResultPart(call_id="call_a", name="read_file", ok=True, output="OK: 1 line"),
        ToolResultPart(call_id="call_b", name="search_code", ok=False, output="ERROR: none")])
    second_request = simple_request(tools=tools, reasoning_effort="high", tail=["Reminder: verify."],
                                    messages=[*first_request.messages, assistant_message(reply), results])
    _, error = await collect(provider, second_request)
    assert error is None

    first, second = (r.json() for r in server.requests)
    for body in (first, second):
        assert body["store"] is False
        assert body["stream"] is True
        assert "previous_response_id" not in body
        assert body["include"] == ["reasoning.encrypted_content"]
        assert body["instructions"] == "You are a test."
        assert body["reasoning"] == {"effort": "high", "summary": "auto"}
        assert [t["name"] for t in body["tools"]] == ["read_file", "search_code", "verify_project"]
        assert body["tools"][0] == {"type": "function", "name": "read_file", "description": "tool read_file",
                                    "parameters": {"type": "object"}, "strict": False}
    assert list(second) == ["model", "stream", "store", "max_output_tokens", "include", "instructions", "tools",
                            "input", "reasoning"]
    assert second["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan → read\n\nthen fix ü"}],
         "encrypted_content": "gAAAA-enc-1"},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Lecture du fichier 📄"}]},
        {"type": "function_call", "call_id": "call_a", "name": "read_file", "arguments": '{"path":"ü.py"}'},
        {"type": "function_call", "call_id": "call_b", "name": "search_code",
         "arguments": '{"query":"naïve"}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "OK: 1 line"},
        {"type": "function_call_output", "call_id": "call_b", "output": "ERROR: none"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Reminder: verify."}]},
    ]
    # Full input every time: the second body repeats the first input as its prefix.
    assert second["input"][:1] == first["input"]
    assert server.requests[1].body == provider.encode_request(second_request)


async def test_identical_requests_send_identical_bytes(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    done = responses_sse([ev("response.completed", response={"id": "r"})])
    server.queue(Reply(chunks=[done]), Reply(chunks=[done]))
    provider = make_provider("responses", server.url)
    request = simple_request(messages=[
        Message(role=Role.USER, parts=[TextPart(text="é"), TextPart(text="[note]", synthetic=True)])])
    await collect(provider, request)
    await collect(provider, request)
    first, second = server.requests
    assert first.body == second.body
    assert json.loads(first.body)["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "é\n\n[note]"}]}]


def test_reasoning_without_encrypted_content_is_left_out_and_ids_are_never_sent(
        make_provider: ProviderFactory) -> None:
    provider = make_provider("responses", "http://127.0.0.1:9/v1")
    request = simple_request(messages=[
        Message(role=Role.USER, parts=[TextPart(text="go")]),
        Message(role=Role.ASSISTANT, parts=[
            ReasoningPart(text="from a chat model"),
            ReasoningPart(text="", provider_item_id="rs_9", encrypted_content="enc-9"),
            ToolCallPart(call_id="c", name="read_file", arguments="{}")]),
    ])
    body = json.loads(provider.encode_request(request))
    assert body["input"][1:] == [
        {"type": "reasoning", "summary": [], "encrypted_content": "enc-9"},
        {"type": "function_call", "call_id": "c", "name": "read_file", "arguments": "{}"},
    ]
    assert b"rs_9" not in provider.encode_request(request)


def test_models_without_reasoning_do_not_ask_for_reasoning_items(make_provider: ProviderFactory) -> None:
    provider = make_provider("responses", "http://127.0.0.1:9/v1", reasoning_items=False)
    body = json.loads(provider.encode_request(simple_request()))
    assert "include" not in body and "reasoning" not in body


async def test_a_failed_response_reports_the_servers_message(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[responses_sse([
        ev("response.created", response={"id": "r"}),
        ev("response.failed", response={"id": "r", "status": "failed",
                                        "error": {"code": "server_error", "message": "The model broke."}}),
    ])]))
    events, error = await collect(make_provider("responses", server.url), simple_request())
    assert error is not None
    assert error.kind is ProviderErrorKind.HTTP_STATUS
    assert "The model broke." in error.message
    assert not any(isinstance(e, ReplyDone) for e in events)
    assert len(server.requests) == 1
