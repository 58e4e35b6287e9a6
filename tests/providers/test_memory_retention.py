"""What a provider keeps after a request (it sets the peak RSS of a 1,000-step run).

httpx's response and its stream refer to each other; left to the cycle collector, every request of a
run — with its whole body, hundreds of KB late in a long run — stayed alive until a full GC pass, and a
1,000-step headless run peaked at 62 MB instead of 53. These tests run real streams against the
loopback server with the cycle collector off: whatever is not freed by reference counting at once
shows up as a body still referenced after the provider is done with it.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from lsp_agent._startup.memory import drop_frames
from lsp_agent.domain.ports import ProviderError
from lsp_agent.providers.http_base import HttpStreamingProvider
from lsp_agent.providers.http_client import httpx
from tests.providers.loopback import (
    LoopbackServer,
    ProviderFactory,
    Reply,
    Wire,
    json_reply,
    simple_request,
    turn,
)

STEPS = 4
WIRES: list[Wire] = ["chat", "responses"]


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def live_requests() -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, httpx.Request | httpx.Response))


async def stream_all(provider: HttpStreamingProvider, body: bytes) -> None:
    async for _ in provider.stream(simple_request(), body):
        pass


@pytest.mark.parametrize("keep_alive", [True, False])
@pytest.mark.parametrize("wire", WIRES)
async def test_a_finished_stream_frees_its_request_and_body_at_once(
        wire: Wire, keep_alive: bool, server: LoopbackServer, make_provider: ProviderFactory,
        no_cycle_collector: None) -> None:
    server.keep_alive = keep_alive
    server.queue(*(Reply(chunks=[turn(wire, text=f"step {i}", usage=(10, 1, 0, 0))]) for i in range(STEPS)))
    provider = make_provider(wire, server.url)
    body = provider.encode_request(simple_request())
    held = sys.getrefcount(body)
    before = live_requests()

    for _ in range(STEPS):
        await stream_all(provider, body)

    assert len(server.requests) == STEPS
    assert sys.getrefcount(body) == held, "a finished request still holds its body (a reference cycle?)"
    assert live_requests() == before


@pytest.mark.parametrize("wire", WIRES)
async def test_a_failed_status_frees_its_request_and_body_at_once(
        wire: Wire, server: LoopbackServer, make_provider: ProviderFactory, no_cycle_collector: None) -> None:
    # a 400 is the request's own fault (not retried): its error body is read, then the provider raises
    server.queue(json_reply(400, {"error": {"message": "bad request"}}))
    provider = make_provider(wire, server.url, max_retries=0)
    body = provider.encode_request(simple_request())
    held = sys.getrefcount(body)
    before = live_requests()

    try:
        await stream_all(provider, body)
    except ProviderError as exc:
        assert exc.status == 400
        drop_frames(exc)  # what the loop does with an error once its text is taken
    else:
        raise AssertionError("a 400 raised nothing")

    assert sys.getrefcount(body) == held
    assert live_requests() == before
