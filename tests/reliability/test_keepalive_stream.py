"""A model server that keeps its stream open without sending anything cannot hold a run forever.

The real `lsp-agent run --json` against a loopback SSE server (TCP_NODELAY on, so every comment
leaves as its own segment): keep-alive comments alone end the request at the idle timeout, and a
stream that keeps sending data but never finishes ends at the request's deadline. Either way the
error is classified and the run ends with its `run_finish`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.providers.loopback import LoopbackServer, Reply, chat_sse, run_agent, write_workspace

KEEP_ALIVE = b": ping\n\n"
PROVIDER = "providers.openai-compatible"
#: what the run must end well within; the servers below would keep it open for 5 minutes
BOUND_S = 45.0


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    srv = LoopbackServer()
    await srv.start()
    yield srv
    await srv.close()


async def _run(server: LoopbackServer, tmp_path: Path, *settings: str) -> tuple[float, dict[str, object]]:
    root = write_workspace(tmp_path / "ws", {"notes.txt": "hello\n"})
    extra = [arg for setting in settings for arg in ("--config", f"{PROVIDER}.{setting}")]
    started = time.monotonic()
    run = await run_agent("Say hi.", root, server.url, "chat", *extra, timeout_s=BOUND_S + 30)
    elapsed = time.monotonic() - started
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    return elapsed, run.finish


async def test_keep_alive_comments_alone_end_the_run_at_the_idle_timeout(
        server: LoopbackServer, tmp_path: Path) -> None:
    # Headers, then a comment every 0.5 s for 5 minutes and never a data line.
    server.queue(Reply(chunks=[KEEP_ALIVE] * 600, chunk_delay=0.5, ending="stall"))

    elapsed, finish = await _run(server, tmp_path, "idleTimeoutS=2", "timeoutS=4", "maxRetries=0")

    assert elapsed < BOUND_S
    assert finish["stopReason"] == "error"
    error = finish["error"]
    assert isinstance(error, dict)
    assert error["kind"] == "idle_timeout"
    assert "keep-alive comments are not data" in error["message"]
    assert len(server.requests) == 1  # a stall mid-stream is not retried


@pytest.mark.parametrize("keep_alive", [False, True], ids=["data", "data-and-comments"])
async def test_a_stream_that_never_finishes_ends_the_run_at_the_request_deadline(
        keep_alive: bool, server: LoopbackServer, tmp_path: Path) -> None:
    # A text delta every 0.5 s: the idle timer is satisfied each time; the reply never ends.
    delta = chat_sse([{"choices": [{"index": 0, "delta": {"content": "."}}]}], done=False)
    server.queue(Reply(chunks=[delta + (KEEP_ALIVE if keep_alive else b"")] * 600, chunk_delay=0.5,
                       ending="stall"))

    elapsed, finish = await _run(server, tmp_path, "idleTimeoutS=2", "timeoutS=4", "requestTimeoutS=4")

    assert 3.5 <= elapsed < BOUND_S
    assert finish["stopReason"] == "error"
    error = finish["error"]
    assert isinstance(error, dict)
    assert error["kind"] == "idle_timeout"
    assert "requestTimeoutS=4s" in error["message"]
    assert len(server.requests) == 1
