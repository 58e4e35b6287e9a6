"""Deeply nested JSON from outside is refused before it is parsed; the session goes on.

Before: 100,000 levels of nesting in a tool call's arguments raised RecursionError in the
controller's parse (only JSONDecodeError was caught): a traceback, exit 1 and no run_finish. The same
parse sat on every path JSON enters by: a provider's SSE events, the editor's JSON-RPC frames, an
MCP server's results. Each case here is played through the real program.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_agent.domain.bounded_json import MAX_DEPTH
from tests.providers.loopback import LoopbackServer, Reply, chat_sse, run_agent, turn
from tests.reliability.framing_client import RawServer, frame
from tests.security.kit import Attack, run_attack

DEEP = 100_000
#: 200 KB of brackets stay in the history like any long argument text: a window that holds them
BIG_WINDOW = ("--config", "compaction.context_window=1000000")


def deep_array(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_arguments(depth: int = DEEP) -> str:
    return '{"path": "deep.txt", "content": ' + deep_array(depth) + "}"


async def test_deep_tool_arguments_are_refused_and_the_run_goes_on(attack: Attack, server: LoopbackServer) -> None:
    await run_attack(attack, server, [
        ("write_file", deep_arguments()),  # type: ignore[list-item]
        # the object is one level: MAX_DEPTH levels in all, then one more
        ("write_file", '{"path": "edge.txt", "content": ' + deep_array(MAX_DEPTH - 1) + "}"),  # type: ignore[list-item]
        ("write_file", '{"path": "edge.txt", "content": ' + deep_array(MAX_DEPTH) + "}"),  # type: ignore[list-item]
        ("write_file", {"path": "after.txt", "content": "the session goes on\n"}),
    ], *BIG_WINDOW)
    assert attack.run is not None
    assert attack.run.returncode == 0 and "Traceback" not in attack.run.stderr, attack.run.stderr[-3000:]
    deep, edge, past_edge, after = attack.run.of("tool_use")
    state = deep["part"]["state"]
    assert state["errorKind"] == "invalid_json"
    assert f"nested deeper than {MAX_DEPTH} levels" in state["output"]
    assert not (attack.workspace / "deep.txt").exists()
    # at the bound it is read (and refused by the schema: content is a string); one more level is not
    assert edge["part"]["state"]["errorKind"] == "parameter_mismatch"
    assert past_edge["part"]["state"]["errorKind"] == "invalid_json"
    assert after["part"]["state"]["output"].startswith("OK: created after.txt")
    assert attack.run.finish["stopReason"] == "final"
    attack.assert_contained()


async def test_a_deep_sse_event_is_a_malformed_stream_not_a_crash(tmp_path: Path, server: LoopbackServer) -> None:
    event = '{"choices": [{"index": 0, "delta": {"content": ' + deep_array(DEEP) + "}}]}"
    body = chat_sse([{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}}]}], done=False)
    server.queue(Reply(chunks=[body, f"data: {event}\n\n".encode()]))
    run = await run_agent("hello", tmp_path, server.url, "chat", timeout_s=120)
    assert "Traceback" not in run.stderr and "RecursionError" not in run.stderr, run.stderr[-3000:]
    finish = run.finish
    assert finish["stopReason"] == "error"
    error = json.dumps(finish)
    assert "malformed" in error and f"nested deeper than {MAX_DEPTH} levels" in error
    # the session is kept: the next run continues it (the user asks again)
    server.queue(Reply(chunks=[turn("chat", text="fine now")], chunk_delay=0))
    again = await run_agent("again", tmp_path, server.url, "chat", "--session", finish["sessionID"], timeout_s=120)
    assert again.finish["stopReason"] == "final" and again.returncode == 0


@pytest.fixture
def raw_server(tmp_path: Path, isolated_state: Path) -> Iterator[RawServer]:
    root = tmp_path / "ws"
    root.mkdir()
    server = RawServer(root)
    server.initialize()
    yield server
    server.close()


def test_a_deep_json_rpc_frame_is_answered_by_its_id_and_the_server_goes_on(raw_server: RawServer) -> None:
    params = '{"deep": ' + deep_array(DEEP) + "}"
    body = '{"jsonrpc": "2.0", "id": 41, "method": "agent/status", "params": ' + params + "}"
    began = time.monotonic()
    raw_server.send(frame(body))
    answer = raw_server.response(41, timeout=60)
    assert answer["error"]["code"] == -32600
    assert f"nested deeper than {MAX_DEPTH} levels" in answer["error"]["message"]
    assert time.monotonic() - began < 30
    # a notification (no id): answered with id null, nothing else happens
    raw_server.send(frame('{"jsonrpc": "2.0", "method": "initialized", "params": ' + params + "}"))
    raw_server.barrier()
    assert [m["id"] for m in raw_server.received if "error" in m] == [41, None]
    assert raw_server.request("agent/status", {})["result"] is not None
    assert raw_server.proc.poll() is None


def test_a_frame_at_the_bound_is_read(raw_server: RawServer) -> None:
    # MAX_DEPTH levels in all: the message object, params, then arrays
    params = '{"deep": ' + deep_array(MAX_DEPTH - 2) + "}"
    raw_server.send(frame('{"jsonrpc": "2.0", "id": 8, "method": "agent/status", "params": ' + params + "}"))
    answer = raw_server.response(8, timeout=60)
    assert "nested deeper" not in json.dumps(answer)


def _deep_server() -> dict[str, object]:
    here = Path(__file__).resolve().parents[1] / "mcptools" / "deep_server.py"
    return {"command": sys.executable, "args": [str(here)], "startupTimeoutMs": 60_000, "toolTimeoutMs": 60_000,
            "trusted": True}


async def test_a_deep_mcp_result_is_a_prompt_classified_error(tmp_path: Path) -> None:
    from tests.helpers import call, reply
    from tests.mcptools.conftest import results, run_mcp

    replies = [reply(call("mcp__deep__deep", depth=DEEP, where="structured")),
               reply(call("mcp__deep__deep", depth=MAX_DEPTH + 20, where="structured")),
               reply(call("mcp__deep__deep", depth=MAX_DEPTH - 1, where="structured")),
               reply(call("mcp__deep__echo", text="still there")), reply(text="done")]
    began = time.monotonic()
    result, session, _ = await run_mcp(tmp_path, replies, {"deep": _deep_server()})
    past_sdk, past_ours, within, echo = results(session)
    # The SDK's parser refuses 100,000 levels and drops the line: without the bounded transport the
    # call waited for toolTimeoutMs (60 s here). Now it fails at once, with the reason.
    assert past_sdk.error_kind.value == "tool_failure" and f"nested deeper than {MAX_DEPTH} levels" in \
        past_sdk.output
    assert past_sdk.elapsed_ms < 30_000
    # what the SDK reads but we do not: refused where it is converted
    assert past_ours.error_kind.value == "tool_failure" and f"nested deeper than {MAX_DEPTH} levels" in \
        past_ours.output
    assert within.ok and echo.ok and "still there" in echo.output
    assert result.stop_reason.value == "final" and time.monotonic() - began < 60


async def test_a_deep_acp_line_is_answered_by_its_id_and_the_agent_goes_on(tmp_path: Path) -> None:
    import asyncio
    import os

    from tests.e2e.conftest import write_script
    from tests.helpers import reply

    script = write_script(tmp_path / "script.json", [reply(text="hi")])
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lsp_agent", "acp", "--model", "scripted/test", "--script", str(script),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=dict(os.environ), limit=1 << 20)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        deep = '{"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": ' + deep_array(DEEP) + "}\n"
        proc.stdin.write(deep.encode())
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": {
            "protocolVersion": 1, "clientCapabilities": {}}}).encode() + b"\n")
        await proc.stdin.drain()
        answers: dict[object, dict[str, object]] = {}
        while 5 not in answers or 6 not in answers:
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line, "the agent closed its output"
            message = json.loads(line)
            if "id" in message and "method" not in message:
                answers[message["id"]] = message
        error = answers[5]["error"]
        assert isinstance(error, dict) and f"nested deeper than {MAX_DEPTH} levels" in str(error["message"])
        assert "result" in answers[6]  # the agent went on
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
