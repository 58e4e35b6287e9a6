"""What real local servers (llama.cpp, llama-cpp-python, vLLM, Ollama) send, against the loopback server.

Each test stands for one defect seen against a real server or one per-step cost: a history the
server accepts, deterministic errors not retried, output limits sent and honoured, Responses items
keyed by id, errors naming the URL and the fix, tool calls written as text, one TCP connection per
run, and a wire form that is encoded once per message.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.domain.ports import ReplyDone
from lsp_agent.providers.chat_completions import ChatCompletionsProvider
from lsp_agent.providers.http_base import encode_json
from lsp_agent.providers.responses import ResponsesProvider
from lsp_agent.providers.text_calls import find_text_calls
from lsp_agent.settings.config import ProviderConfig
from tests.providers.loopback import (
    LoopbackServer,
    ProviderFactory,
    Reply,
    Wire,
    chat_sse,
    collect,
    json_reply,
    responses_sse,
    simple_request,
    turn,
)

WIRES: list[Wire] = ["chat", "responses"]
CUT = '{"path": "src/app.py", "old_text": "def ma'


def history_with_a_cut_call() -> list[Message]:
    return [
        Message(role=Role.USER, parts=[TextPart(text="fix it")]),
        Message(role=Role.ASSISTANT, parts=[
            ToolCallPart(call_id="call_bad", name="apply_patch", arguments=CUT),
            ToolCallPart(call_id="call_ok", name="read_file", arguments='{"path": "a.py"}')]),
        Message(role=Role.TOOL, parts=[
            ToolResultPart(call_id="call_bad", name="apply_patch", ok=False, output="invalid_json: ..."),
            ToolResultPart(call_id="call_ok", name="read_file", ok=True, output="1: x = 1")]),
    ]


def sent_arguments(wire: Wire, body: dict[str, Any]) -> dict[str, str]:
    if wire == "chat":
        calls = [c for m in body["messages"] for c in m.get("tool_calls") or []]
        return {c["id"]: c["function"]["arguments"] for c in calls}
    return {i["call_id"]: i["arguments"] for i in body["input"] if i["type"] == "function_call"}


# --- a history every server accepts ---------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_a_rejected_calls_invalid_arguments_go_back_as_valid_json(
        wire: Wire, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[turn(wire, text="ok")]))
    request = simple_request(messages=history_with_a_cut_call())

    _, error = await collect(make_provider(wire, server.url), request)

    assert error is None
    sent = sent_arguments(wire, server.requests[0].json())
    assert json.loads(sent["call_bad"]) == {"unparsed_arguments": CUT}  # valid JSON, nothing lost
    assert sent["call_ok"] == '{"path": "a.py"}'  # the model's own bytes when they are valid
    assert request.messages[1].tool_calls()[0].arguments == CUT  # the record keeps the raw text


@pytest.mark.parametrize("wire", WIRES)
async def test_a_5xx_that_names_the_request_is_not_retried(
        wire: Wire, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.fallback = json_reply(500, {"error": {"code": 500, "type": "server_error",
                                                 "message": "Failed to parse tool call arguments as JSON"}})
    _, error = await collect(make_provider(wire, server.url, max_retries=4), simple_request())

    assert error is not None and error.status == 500
    assert error.attempts == 1 and len(server.requests) == 1
    assert "Failed to parse tool call arguments as JSON" in error.message
    assert server.url in error.message


# --- errors a user can act on --------------------------------------------------------------------


async def test_a_404_on_responses_suggests_the_chat_wire(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.fallback = Reply(status=404, chunks=[b"Not Found"], headers={"Content-Type": "text/plain"})
    _, error = await collect(make_provider("responses", server.url), simple_request())

    assert error is not None and error.status == 404 and error.attempts == 1
    assert error.message.startswith(f"{server.url}/responses answered HTTP 404: Not Found")
    assert "--wire chat" in error.message


async def test_a_404_under_a_base_url_without_v1_suggests_adding_it(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.fallback = json_reply(404, {"detail": "Not Found"})
    base = server.url.removesuffix("/v1")
    _, error = await collect(make_provider("chat", base), simple_request())

    assert error is not None
    assert f"{base}/chat/completions answered HTTP 404" in error.message
    assert f"try {base}/v1" in error.message


async def test_a_401_names_the_unset_key_variable(server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.fallback = json_reply(401, {"error": {"message": "Incorrect API key provided"}})
    _, error = await collect(make_provider("chat", server.url, api_key_env="LSP_AGENT_TEST_KEY"), simple_request())

    assert error is not None and error.status == 401
    assert "set the environment variable LSP_AGENT_TEST_KEY (it is unset)" in error.message


@pytest.mark.parametrize("payload", [
    {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 9120, "n_ctx": 8192,
               "message": "the request exceeds the available context size, try increasing it"}},
    {"error": {"type": "invalid_request_error", "message": "This model's maximum context length is 8192 tokens. "
               "However, you requested 9120 tokens (9000 in the messages, 120 in the completion)."}},
])
async def test_a_context_overflow_says_so_with_the_numbers(
        payload: dict[str, Any], server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.fallback = json_reply(400, payload)
    _, error = await collect(make_provider("chat", server.url), simple_request())

    assert error is not None and error.attempts == 1
    assert "larger than the server's context (prompt 9120 tokens, context 8192)" in error.message
    assert "compaction.context_window" in error.message


# --- output limits ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("wire", "field"), [("chat", "max_tokens"), ("responses", "max_output_tokens")])
async def test_the_output_limit_is_sent_from_the_setting_with_a_default(
        wire: Wire, field: str, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[turn(wire, text="a")]), Reply(chunks=[turn(wire, text="b")]),
                 Reply(chunks=[turn(wire, text="c")]))
    default = make_provider(wire, server.url)
    per_model = make_provider(wire, server.url, max_output_tokens=8192)
    config = ProviderConfig.model_validate({"baseUrl": server.url, "wire": wire, "maxOutputTokens": 300})
    configured = (ChatCompletionsProvider if wire == "chat" else ResponsesProvider)(
        config, model="m", max_output_tokens=8192)  # the user's setting beats the model's default
    try:
        for provider in (default, per_model, configured):
            _, error = await collect(provider, simple_request())
            assert error is None
    finally:
        await configured.aclose()
    assert [r.json()[field] for r in server.requests] == [4096, 8192, 300]


async def test_finish_reason_length_marks_the_reply_truncated(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[chat_sse([
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                            "function": {"name": "apply_patch", "arguments": CUT}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}])]))
    events, error = await collect(make_provider("chat", server.url), simple_request())

    assert error is None and isinstance(events[-1], ReplyDone)
    assert events[-1].reply.truncated
    assert events[-1].reply.usage is None  # no usage chunk: unknown, not zero


async def test_an_incomplete_response_marks_the_reply_truncated(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[responses_sse([
        {"type": "response.output_text.delta", "output_index": 0, "delta": "a long"},
        {"type": "response.incomplete", "response": {"id": "r", "status": "incomplete",
                                                     "incomplete_details": {"reason": "max_output_tokens"}}}])]))
    events, error = await collect(make_provider("responses", server.url), simple_request())

    assert error is None and isinstance(events[-1], ReplyDone)
    assert events[-1].reply.truncated and events[-1].reply.text == "a long"


# --- the Responses wire as llama.cpp speaks it ----------------------------------------------------


async def test_responses_items_keyed_by_id_without_output_index(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    call = {"type": "function_call", "id": "fc_9", "call_id": "call_9", "name": "read_file",
            "arguments": '{"path": "a.py"}'}
    server.queue(Reply(chunks=[responses_sse([
        {"type": "response.created", "response": {"id": "resp_x"}},
        {"type": "response.output_item.added", "item": {"type": "message", "id": "msg_7", "content": []}},
        {"type": "response.output_text.delta", "item_id": "msg_7", "delta": "Reading."},
        {"type": "response.output_item.done", "item": {"type": "message", "id": "msg_7",
                                                       "content": [{"type": "output_text", "text": "Reading."}]}},
        {"type": "response.output_item.added", "item": {**call, "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_9", "delta": '{"path": "a.py"}'},
        {"type": "response.output_item.done", "item": call},
        {"type": "response.completed", "response": {"id": "resp_x", "status": "completed"}}])]))
    events, error = await collect(make_provider("responses", server.url), simple_request())

    assert error is None and isinstance(events[-1], ReplyDone)
    reply = events[-1].reply
    assert reply.text == "Reading."
    assert [(c.call_id, c.name, c.arguments) for c in reply.tool_calls] == [("call_9", "read_file", '{"path": "a.py"}')]


# --- tool calls written as text ---------------------------------------------------------------------

TAGGED = 'I will read it.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>'


@pytest.mark.parametrize(("mode", "expected_calls"), [("native", 0), ("text", 1), ("auto", 1)])
async def test_text_form_tool_calls_are_opt_in_per_provider(
        mode: str, expected_calls: int, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[turn("chat", text=TAGGED)]))
    provider = make_provider("chat", server.url, tool_call_format=mode)
    events, error = await collect(provider, simple_request())

    assert error is None and isinstance(events[-1], ReplyDone)
    reply = events[-1].reply
    assert len(reply.tool_calls) == expected_calls
    if expected_calls:
        assert (reply.tool_calls[0].name, json.loads(reply.tool_calls[0].arguments)) == ("read_file", {"path": "a.py"})
        assert reply.text == "I will read it."
        assert bool(reply.notes) == (mode == "auto")  # auto says when it switches on
    else:
        assert reply.text == TAGGED


async def test_auto_switches_on_only_after_a_valid_call_then_passes_broken_ones_to_the_controller(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    broken = '<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>'
    server.queue(Reply(chunks=[turn("chat", text=broken)]), Reply(chunks=[turn("chat", text=TAGGED)]),
                 Reply(chunks=[turn("chat", text=broken)]))
    provider = make_provider("chat", server.url, tool_call_format="auto")
    replies = []
    for _ in range(3):
        events, error = await collect(provider, simple_request())
        assert error is None and isinstance(events[-1], ReplyDone)
        replies.append(events[-1].reply)

    assert replies[0].tool_calls == [] and replies[0].text == broken  # not switched on yet: plain text
    assert len(replies[1].tool_calls) == 1 and replies[1].notes
    # Once on, a broken call is a call: the controller rejects it as invalid_json, visibly.
    assert [c.name for c in replies[2].tool_calls] == ["read_file"] and not replies[2].notes
    assert replies[2].tool_calls[0].arguments.startswith('{"name": "read_file"')


def test_fenced_json_calls_are_found_and_plain_examples_are_not() -> None:
    fenced = 'Call:\n```json\n{"name": "verify_project", "arguments": {}}\n```\n'
    assert [(c.name, c.arguments, c.valid) for c in find_text_calls(fenced)] == [("verify_project", "{}", True)]
    assert find_text_calls('Example:\n```json\n{"name": "Ada", "age": 36}\n```') == []
    assert find_text_calls("no calls here") == []


# --- one connection per run ---------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_a_whole_run_uses_one_tcp_connection_against_a_keep_alive_server(
        wire: Wire, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.keep_alive = True
    server.queue(*(Reply(chunks=[turn(wire, text=f"step {i}", usage=(10, 1, 0, 0))]) for i in range(6)))
    provider = make_provider(wire, server.url)

    for i in range(6):
        events, error = await collect(provider, simple_request())
        assert error is None and isinstance(events[-1], ReplyDone) and events[-1].reply.text == f"step {i}"

    assert len(server.requests) == 6
    assert server.connections == 1


# --- the wire form is encoded once per stored message ------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_encode_request_is_incremental_and_byte_identical(wire: Wire, make_provider: ProviderFactory) -> None:
    provider = make_provider(wire, "http://127.0.0.1:9/v1")
    mapped: list[str] = []
    original = provider._map_message  # type: ignore[attr-defined]

    def counting(message: Message) -> list[dict[str, Any]]:
        mapped.append(message.id)
        result: list[dict[str, Any]] = original(message)
        return result

    provider._map_message = counting  # type: ignore[attr-defined]

    def encode(messages: list[Message]) -> tuple[bytes, list[str]]:
        mapped.clear()
        body = provider.encode_request(simple_request(messages=messages))
        ids = list(mapped)
        assert body == encode_json(provider.request_body(simple_request(messages=messages)))  # type: ignore[attr-defined]
        return body, ids

    history = history_with_a_cut_call()
    _, ids = encode(history)
    assert len(ids) == 3

    history.append(Message(role=Role.USER, parts=[TextPart(text="and now?")]))
    _, ids = encode(history)
    assert ids == [history[-1].id]  # only the new message was mapped

    # A folded copy (same id, output swapped) is re-mapped; a dropped (compacted) message leaves the cache.
    results = history[2]
    folded = results.model_copy(update={"parts": [results.parts[0], results.parts[1].model_copy(
        update={"output": "[folded: read_file a.py]"})]})
    body, ids = encode([history[0], history[1], folded, history[3]])
    assert ids == [folded.id]
    assert b"[folded: read_file a.py]" in body and b"1: x = 1" not in body
    _, ids = encode(history[1:])
    assert ids == [history[2].id]  # the unfolded original is a different object again


def test_the_transcript_says_unknown_instead_of_zero_tokens() -> None:
    from lsp_agent.cli.sinks import summary_line
    from lsp_agent.domain.events import RunFinish, StopReason, Tokens, VerificationStatus

    def finish(tokens: Tokens) -> RunFinish:
        return RunFinish(session_id="s", generation="g", stop_reason=StopReason.FINAL,
                         verification=VerificationStatus.NOT_RUN, steps=1, tool_calls=0, tool_errors=0,
                         tokens=tokens, files_changed=[], model="m", scripted=False)

    assert "tokens unknown (the server reported no usage)" in summary_line(finish(Tokens(unknown=True)))
    assert "tokens in 5 out 2 (incomplete" in summary_line(finish(Tokens(input=5, output=2, unknown=True)))
    assert "tokens in 0 out 0 ·" in summary_line(finish(Tokens()))


async def test_a_context_overflow_reported_in_the_stream_says_so_with_the_numbers(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[chat_sse([{"error": {
        "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 9120, "n_ctx": 4096,
        "message": "request (9120 tokens) exceeds the available context size (4096 tokens), try increasing it"}}])]))
    _, error = await collect(make_provider("chat", server.url), simple_request())

    assert error is not None
    assert "mid-stream" in error.message
    assert "larger than the server's context (prompt 9120 tokens, context 4096)" in error.message
