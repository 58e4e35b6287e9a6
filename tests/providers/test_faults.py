"""Failure handling of both wire protocols against a real loopback server.

Retries happen only before a stream starts (429, 5xx, refused connections);
once bytes flow, a cut, malformed or stalled stream ends the call with a typed
error and never a ReplyDone, so no partial tool call can be executed.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import httpx
import pytest

from lsp_agent.domain.ports import ProviderErrorKind, ReplyDone, TextDelta
from lsp_agent.providers.http_base import RetryPolicy, backoff_delay, error_message, parse_retry_after
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
)

WIRES: list[Wire] = ["chat", "responses"]


def ok_body(wire: Wire) -> bytes:
    if wire == "chat":
        return chat_sse([{"choices": [{"index": 0, "delta": {"content": "ok"}}]}])
    return responses_sse([{"type": "response.output_text.delta", "output_index": 0, "delta": "ok"},
                          {"type": "response.completed", "response": {"id": "r"}}])


def started_body(wire: Wire) -> bytes:
    """A text delta, then the opening of a tool call whose arguments are still streaming."""
    if wire == "chat":
        return chat_sse([
            {"choices": [{"index": 0, "delta": {"content": "Let me look."}}]},
            {"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "call_1", "type": "function",
                 "function": {"name": "run_command", "arguments": '{"argv": ["rm", '}}]}}]},
        ], done=False)
    return responses_sse([
        {"type": "response.output_text.delta", "output_index": 0, "delta": "Let me look."},
        {"type": "response.output_item.added", "output_index": 1,
         "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "run_command",
                  "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1",
         "delta": '{"argv": ["rm", '},
    ])


def half_an_event(wire: Wire) -> bytes:
    if wire == "chat":
        return b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"argum'
    return b'event: response.function_call_arguments.delta\ndata: {"type":"response.function_call_argu'


def malformed_body(wire: Wire) -> bytes:
    if wire == "chat":
        return b'data: {"choices": [{"index": 0, "delta": {"content": "ok"}}]}\n\ndata: {"choices": [oops\n\n'
    return b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", delta}\n\n'


# --- retries before the stream ------------------------------------------------------------------


async def test_429_waits_the_full_retry_after_then_succeeds(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(json_reply(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "1"}),
                 Reply(chunks=[ok_body("chat")]))
    provider = make_provider("chat", server.url)

    events, error = await collect(provider, simple_request())

    assert error is None and isinstance(events[-1], ReplyDone)
    assert len(server.requests) == 2
    assert provider.last_attempts == 2
    waited = server.requests[1].at - server.requests[0].at
    assert 0.95 <= waited < 2.5


async def test_429_retry_after_is_capped(server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(json_reply(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "30"}),
                 Reply(chunks=[ok_body("responses")]))
    provider = make_provider("responses", server.url, retry=RetryPolicy(base_s=0.005, retry_after_cap_s=0.3))

    events, error = await collect(provider, simple_request())

    assert error is None and isinstance(events[-1], ReplyDone)
    assert provider.last_attempts == 2
    waited = server.requests[1].at - server.requests[0].at
    assert 0.28 <= waited < 1.5


@pytest.mark.parametrize("wire", WIRES)
async def test_500_twice_then_success(wire: Wire, server: LoopbackServer,
                                      make_provider: ProviderFactory) -> None:
    boom = json_reply(500, {"error": {"message": "overloaded"}})
    server.queue(boom, boom, Reply(chunks=[ok_body(wire)]))
    provider = make_provider(wire, server.url, max_retries=3)

    events, error = await collect(provider, simple_request())

    assert error is None
    assert isinstance(events[-1], ReplyDone) and events[-1].reply.text == "ok"
    assert len(server.requests) == 3
    assert provider.last_attempts == 3


@pytest.mark.parametrize("wire", WIRES)
async def test_500_forever_gives_up_after_bounded_attempts(wire: Wire, server: LoopbackServer,
                                                          make_provider: ProviderFactory) -> None:
    server.fallback = json_reply(503, {"error": {"message": "The engine is overloaded", "type": "server_error"}})
    provider = make_provider(wire, server.url, max_retries=2)

    events, error = await collect(provider, simple_request())

    assert events == []
    assert error is not None
    assert error.kind is ProviderErrorKind.HTTP_STATUS
    assert error.status == 503
    assert error.attempts == 3
    assert "The engine is overloaded" in error.message
    assert len(server.requests) == 3


@pytest.mark.parametrize("wire", WIRES)
async def test_client_errors_are_not_retried_and_carry_the_servers_message(
        wire: Wire, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.fallback = json_reply(400, {"error": {"message": "Invalid 'tools[0].name': bad",
                                                 "type": "invalid_request_error"}})
    events, error = await collect(make_provider(wire, server.url), simple_request())

    assert events == []
    assert error is not None
    assert (error.kind, error.status, error.attempts) == (ProviderErrorKind.HTTP_STATUS, 400, 1)
    path = "/chat/completions" if wire == "chat" else "/responses"
    assert error.message == (f"{server.url}{path} answered HTTP 400: "
                             "Invalid 'tools[0].name': bad (invalid_request_error)")
    assert len(server.requests) == 1


@pytest.mark.parametrize("wire", WIRES)
async def test_connection_refused_is_retried_then_reported(wire: Wire, closed_port: int,
                                                           make_provider: ProviderFactory) -> None:
    provider = make_provider(wire, f"http://127.0.0.1:{closed_port}/v1", max_retries=2)

    events, error = await collect(provider, simple_request())

    assert events == []
    assert error is not None
    assert error.kind is ProviderErrorKind.CONNECTION
    assert error.attempts == 3
    assert isinstance(error.__cause__, httpx.ConnectError)
    # the message says what to start (docs/troubleshooting.md quotes it)
    assert error.message.endswith(f" -- is the model server running at http://127.0.0.1:{closed_port}/v1? "
                                  "(or check the base URL)")


@pytest.mark.parametrize(("base_url", "hint"), [
    ("http://localhost:11434/v1", " -- is `ollama serve` running?"),
    ("http://127.0.0.1:8000/v1",
     " -- is the model server running at http://127.0.0.1:8000/v1? (or check the base URL)"),
])
def test_a_refused_connection_names_the_server_to_start(base_url: str, hint: str) -> None:
    from lsp_agent.providers.http_base import connection_hint

    assert connection_hint(httpx.ConnectError("[Errno 111] Connection refused"), base_url) == hint
    # a connection that was made and then cut is another problem: no advice to start a server
    assert connection_hint(httpx.RemoteProtocolError("peer closed connection"), base_url) == ""


# --- failures once the stream has begun -----------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_a_cut_inside_tool_call_arguments_is_stream_cut_without_a_reply(
        wire: Wire, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[started_body(wire), half_an_event(wire)], ending="cut"))

    events, error = await collect(make_provider(wire, server.url), simple_request())

    assert error is not None
    assert error.kind is ProviderErrorKind.STREAM_CUT
    assert error.__cause__ is not None
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Let me look."]
    assert not any(isinstance(e, ReplyDone) for e in events)
    assert len(server.requests) == 1  # never retried blindly


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stream_that_ends_without_its_terminal_event_is_stream_cut(
        wire: Wire, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[started_body(wire)]))  # a clean HTTP end, but no [DONE]/completed

    events, error = await collect(make_provider(wire, server.url), simple_request())

    assert error is not None
    assert error.kind is ProviderErrorKind.STREAM_CUT
    assert ("[DONE]" if wire == "chat" else "response.completed") in error.message
    assert not any(isinstance(e, ReplyDone) for e in events)


@pytest.mark.parametrize("wire", WIRES)
async def test_a_malformed_event_is_reported_as_malformed(
        wire: Wire, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[malformed_body(wire)]))

    events, error = await collect(make_provider(wire, server.url), simple_request())

    assert error is not None
    assert error.kind is ProviderErrorKind.MALFORMED
    assert not any(isinstance(e, ReplyDone) for e in events)
    assert len(server.requests) == 1


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stalled_stream_times_out_quickly(wire: Wire, server: LoopbackServer,
                                                  make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[started_body(wire)], ending="stall"))
    provider = make_provider(wire, server.url, idle_timeout_s=0.3)

    started = time.monotonic()
    events, error = await collect(provider, simple_request())
    elapsed = time.monotonic() - started

    assert error is not None
    assert error.kind is ProviderErrorKind.IDLE_TIMEOUT
    assert 0.25 <= elapsed < 2.0
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Let me look."]
    assert not any(isinstance(e, ReplyDone) for e in events)
    assert len(server.requests) == 1


KEEP_ALIVE = b": ping\n\n"


@pytest.mark.parametrize("wire", WIRES)
async def test_keep_alive_comments_alone_do_not_hold_the_idle_timeout_open(
        wire: Wire, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    # A comment every 0.1 s for a minute: each one is a socket read, none is data.
    server.queue(Reply(chunks=[started_body(wire)] + [KEEP_ALIVE] * 600, chunk_delay=0.1, ending="stall"))
    provider = make_provider(wire, server.url, idle_timeout_s=0.5)

    started = time.monotonic()
    events, error = await collect(provider, simple_request())
    elapsed = time.monotonic() - started

    assert error is not None
    assert error.kind is ProviderErrorKind.IDLE_TIMEOUT
    assert "keep-alive comments are not data" in error.message
    assert error.attempts == 1  # a stall mid-stream is not retried
    assert 0.45 <= elapsed < 20.0  # the pings would have kept it open for 60 s
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Let me look."]
    assert not any(isinstance(e, ReplyDone) for e in events)
    assert len(server.requests) == 1


def _trickle(wire: Wire) -> bytes:
    """One data event that is not the end of the reply."""
    if wire == "chat":
        return chat_sse([{"choices": [{"index": 0, "delta": {"content": "."}}]}], done=False)
    return responses_sse([{"type": "response.output_text.delta", "output_index": 0, "delta": "."}])


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stream_that_never_finishes_ends_at_the_request_deadline(
        wire: Wire, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    # Real data every 0.1 s keeps the idle timer happy; only the deadline can end this.
    server.queue(Reply(chunks=[_trickle(wire)] * 600, chunk_delay=0.1, ending="stall"))
    provider = make_provider(wire, server.url, idle_timeout_s=0.5, request_timeout_s=1.5)

    started = time.monotonic()
    events, error = await collect(provider, simple_request())
    elapsed = time.monotonic() - started

    assert error is not None
    assert error.kind is ProviderErrorKind.IDLE_TIMEOUT
    assert "requestTimeoutS=1.5s" in error.message
    assert 1.4 <= elapsed < 20.0
    assert len([e for e in events if isinstance(e, TextDelta)]) >= 2
    assert not any(isinstance(e, ReplyDone) for e in events)
    assert len(server.requests) == 1


async def test_the_request_deadline_cuts_the_retries_short(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    # 503 with Retry-After 1 forever: without a deadline, 10 retries would take 10 s.
    server.fallback = json_reply(503, {"error": {"message": "warming up"}}, {"Retry-After": "1"})
    provider = make_provider("chat", server.url, max_retries=10, request_timeout_s=1.5)

    started = time.monotonic()
    _, error = await collect(provider, simple_request())
    elapsed = time.monotonic() - started

    assert error is not None
    assert error.kind is ProviderErrorKind.HTTP_STATUS and error.status == 503
    assert "warming up" in error.message
    assert elapsed < 8.0
    assert 1 <= len(server.requests) <= 2


@pytest.mark.parametrize("wire", WIRES)
async def test_a_json_answer_to_a_stream_request_is_malformed(
        wire: Wire, server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(json_reply(200, {"object": "chat.completion", "choices": []}))
    _, error = await collect(make_provider(wire, server.url), simple_request())
    assert error is not None
    assert error.kind is ProviderErrorKind.MALFORMED
    assert "answered JSON instead of an event stream" in error.message
    assert server.url in error.message


async def test_an_error_chunk_mid_stream_reports_the_servers_message(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.queue(Reply(chunks=[chat_sse([{"choices": [{"index": 0, "delta": {"content": "par"}}]},
                                         {"error": {"message": "context length exceeded"}}])]))
    events, error = await collect(make_provider("chat", server.url), simple_request())
    assert error is not None
    assert error.kind is ProviderErrorKind.HTTP_STATUS
    assert "context length exceeded" in error.message
    assert not any(isinstance(e, ReplyDone) for e in events)


# --- pure helpers ---------------------------------------------------------------------------------


def test_retry_after_forms() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after(httpx.Headers({"Retry-After": "7"})) == 7.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250", "Retry-After": "7"})) == 0.25
    assert parse_retry_after(httpx.Headers({"Retry-After": "Wed, 01 Jan 2025 12:00:05 GMT"}), now) == 5.0
    assert parse_retry_after(httpx.Headers({"Retry-After": "soon"})) is None
    assert parse_retry_after(httpx.Headers({})) is None


def test_backoff_is_full_jitter_below_an_exponential_cap() -> None:
    import random

    rng = random.Random(1)
    for attempt in range(1, 8):
        ceiling = min(2.0, 0.1 * 2 ** (attempt - 1))
        assert all(0.0 <= backoff_delay(attempt, 0.1, 2.0, rng) <= ceiling for _ in range(50))


def test_error_messages_are_extracted_from_common_shapes() -> None:
    assert error_message(b'{"error": {"message": "bad key", "code": "invalid_api_key"}}') == \
        "bad key (invalid_api_key)"
    assert error_message(b'{"error": "model not found"}') == "model not found"
    assert error_message(b'{"detail": "Not Found"}') == "Not Found"
    assert error_message(b"<html>502 Bad Gateway</html>") == "<html>502 Bad Gateway</html>"
    assert error_message(b"") == "(empty error body)"
