"""The whole `lsp-agent run --json` path, as a subprocess, against a real loopback server.

The server plays the model for both wire protocols: read_file -> apply_patch ->
verify_project -> final text. What is asserted is what a user or a CI job sees:
the JSON event stream, the exit code, the file on disk, and what reached the server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.providers.loopback import (
    LoopbackServer,
    Reply,
    Wire,
    chat_sse,
    cut_inside_arguments,
    json_reply,
    run_agent,
    split_every,
    turn,
    write_workspace,
)

WIRES: list[Wire] = ["chat", "responses"]
KEY = "sk-loopback-7f3e9a"

CHECK = """\
import pathlib, sys
text = pathlib.Path("greeting.txt").read_text()
sys.exit(0 if text == "hello world\\n" else 1)
"""
VERIFY_CONFIG = f'[[tools.verify]]\nkind = "test"\nargv = [{json.dumps(sys.executable)}, "check.py"]\n'
# The retry budget comes from config so that "500 forever" ends in well under a second.
FAST_RETRY = '[providers.openai-compatible]\nbaseUrl = "http://127.0.0.1:9/unused"\nmaxRetries = 1\n'

Call = tuple[str, str, dict[str, Any]]
READ: Call = ("call_read", "read_file", {"path": "greeting.txt"})
PATCH: Call = ("call_patch", "apply_patch",
               {"path": "greeting.txt", "old_text": "hello wrld", "new_text": "hello world"})
VERIFY: Call = ("call_verify", "verify_project", {})
USAGE = [(1200, 20, 5, 0), (1300, 30, 7, 1024), (1400, 10, 0, 1024), (1500, 15, 3, 1280)]


def workspace(tmp_path: Path, config: str = VERIFY_CONFIG) -> Path:
    return write_workspace(tmp_path / "ws", {"greeting.txt": "hello wrld\n", "check.py": CHECK}, config)


def queue_task(server: LoopbackServer, wire: Wire) -> None:
    bodies = [turn(wire, call=READ, usage=USAGE[0]),
              turn(wire, call=PATCH, usage=USAGE[1]),
              turn(wire, call=VERIFY, usage=USAGE[2]),
              turn(wire, text="Fixed the typo; the check passes.", usage=USAGE[3])]
    # Small pieces: lines and JSON objects are split across chunks, as on a real network.
    server.queue(*(Reply(chunks=split_every(body, 97), chunk_delay=0) for body in bodies))


@pytest.mark.parametrize("wire", WIRES)
async def test_multi_step_task_streams_events_edits_the_file_and_verifies(
        wire: Wire, server: LoopbackServer, tmp_path: Path) -> None:
    root = workspace(tmp_path)
    queue_task(server, wire)

    run = await run_agent("Fix the typo in greeting.txt and verify.", root, server.url, wire,
                          model="openai-compatible/loop-model", env={"LSP_AGENT_API_KEY": KEY})

    assert run.returncode == 0, run.stderr
    assert (root / "greeting.txt").read_text() == "hello world\n"
    assert run.types() == ["step_start", "tool_use", "step_finish"] * 3 + [
        "step_start", "text", "step_finish", "run_finish"]
    uses = run.of("tool_use")
    assert [u["part"]["tool"] for u in uses] == ["read_file", "apply_patch", "verify_project"]
    assert [u["part"]["callID"] for u in uses] == ["call_read", "call_patch", "call_verify"]
    assert all(u["part"]["state"]["status"] == "completed" for u in uses)
    assert uses[2]["part"]["state"]["output"].startswith("OK: verify passed")
    assert run.of("text")[0]["part"]["text"] == "Fixed the typo; the check passes."
    steps = [e["part"]["tokens"] for e in run.of("step_finish")]
    assert [(t["input"], t["output"], t["reasoning"], t["cache"]["read"]) for t in steps] == USAGE
    finish = run.finish
    assert finish["stopReason"] == "final"
    assert finish["verification"] == "verified"
    assert finish["verificationPartID"] == uses[2]["part"]["id"]
    assert (finish["steps"], finish["toolCalls"], finish["toolErrors"]) == (4, 3, 0)
    assert finish["tokens"]["input"] == sum(u[0] for u in USAGE)
    assert finish["tokens"]["output"] == sum(u[1] for u in USAGE)
    assert finish["tokens"]["reasoning"] == sum(u[2] for u in USAGE)
    assert finish["tokens"]["cache"]["read"] == sum(u[3] for u in USAGE)
    assert finish["filesChanged"] == ["greeting.txt"]
    assert finish["model"] == "openai-compatible/loop-model" and finish["scripted"] is False
    assert finish.get("error") is None
    # What reached the server: the right endpoint, the model id, the key as a Bearer token.
    assert len(server.requests) == 4
    endpoint = "/v1/chat/completions" if wire == "chat" else "/v1/responses"
    for received in server.requests:
        assert (received.method, received.path) == ("POST", endpoint)
        assert received.headers["authorization"] == f"Bearer {KEY}"
        assert received.json()["model"] == "loop-model"
        assert received.json()["stream"] is True


async def test_no_key_in_the_environment_sends_no_authorization_header(
        server: LoopbackServer, tmp_path: Path) -> None:
    root = workspace(tmp_path)
    server.queue(Reply(chunks=[turn("chat", text="Nothing to do.", usage=(10, 2, 0, 0))]))

    run = await run_agent("Say hi.", root, server.url, "chat")

    assert run.returncode == 0, run.stderr
    assert "authorization" not in server.requests[0].headers
    assert run.finish["stopReason"] == "final" and run.finish["verification"] == "not_run"


@pytest.mark.parametrize("wire", WIRES)
async def test_500_forever_stops_with_error_and_the_status(wire: Wire, server: LoopbackServer,
                                                           tmp_path: Path) -> None:
    root = workspace(tmp_path, VERIFY_CONFIG + FAST_RETRY)
    server.fallback = json_reply(500, {"error": {"message": "the engine is on fire", "type": "server_error"}})

    run = await run_agent("Fix the typo.", root, server.url, wire)

    assert run.returncode == 1, run.stderr
    assert len(server.requests) == 2  # maxRetries = 1: bounded
    finish = run.finish
    assert finish["stopReason"] == "error"
    assert finish["error"]["status"] == 500
    assert finish["error"]["kind"] == "http_status"
    assert "the engine is on fire" in finish["error"]["message"]
    assert "2 attempt" in finish["error"]["message"]
    assert run.of("error")[0]["error"] == finish["error"]
    assert (finish["steps"], finish["toolCalls"]) == (1, 0)
    assert (root / "greeting.txt").read_text() == "hello wrld\n"


@pytest.mark.parametrize(("wire", "keep"), [("chat", "half"), ("responses", "half"), ("chat", "all")],
                         ids=["chat-mid-arguments", "responses-mid-arguments", "chat-arguments-complete-no-done"])
async def test_stream_cut_inside_a_tool_call_runs_no_tool(wire: Wire, keep: str, server: LoopbackServer,
                                                         tmp_path: Path) -> None:
    root = workspace(tmp_path)
    raw = json.dumps(PATCH[2])
    server.queue(Reply(chunks=[turn(wire, call=READ, usage=USAGE[0])]),
                 Reply(chunks=cut_inside_arguments(wire, (PATCH[0], PATCH[1], raw),
                                                   keep=None if keep == "half" else len(raw)),
                       ending="cut"))

    run = await run_agent("Fix the typo.", root, server.url, wire)

    assert run.returncode == 1, run.stderr
    assert (root / "greeting.txt").read_text() == "hello wrld\n"
    assert len(server.requests) == 2  # a broken stream is never retried blindly
    assert [u["part"]["tool"] for u in run.of("tool_use")] == ["read_file"]
    finish = run.finish
    assert finish["stopReason"] == "error"
    assert finish["error"]["kind"] == "stream_cut"
    assert (finish["steps"], finish["toolCalls"], finish["filesChanged"]) == (2, 1, [])


async def test_a_reply_cut_by_the_output_limit_runs_none_of_its_calls_and_the_model_is_told(
        server: LoopbackServer, tmp_path: Path) -> None:
    root = workspace(tmp_path)
    # Complete JSON, but the server says the output limit cut the reply: the call may be partial.
    cut = chat_sse([
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_patch", "type": "function",
                      "function": {"name": "apply_patch", "arguments": json.dumps(PATCH[2])}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}])
    server.queue(Reply(chunks=[cut]), Reply(chunks=[chat_sse([
        {"choices": [{"index": 0, "delta": {"content": "Stopping here."}, "finish_reason": "stop"}]}])]))

    run = await run_agent("Fix the typo.", root, server.url, "chat")

    assert run.returncode == 0, run.stderr
    assert (root / "greeting.txt").read_text() == "hello wrld\n"  # nothing ran
    use = run.of("tool_use")[0]["part"]
    assert (use["callID"], use["state"]["status"]) == ("call_patch", "error")
    assert use["state"]["output"].startswith("not run: the reply was cut off by the output-token limit")
    assert [n["kind"] for n in run.of("notice")] == ["truncated"]
    assert [s["part"]["reason"] for s in run.of("step_finish")] == ["length", "stop"]
    second = server.requests[1].json()["messages"]
    assert second[-2] == {"role": "tool", "tool_call_id": "call_patch", "content": use["state"]["output"]}
    assert second[-1]["role"] == "user" and "cut off by the output-token limit" in second[-1]["content"]
    assert run.finish["stopReason"] == "final"
    assert run.finish["tokens"]["unknown"] is True  # the server sent no usage: unknown, not 0
