"""Several processes on one workspace: two real `lsp-agent serve` over stdio (two editor windows on one
folder), and the CLI with `--session` beside a server, sharing one state directory.

While the first server's tool call runs (a command that waits for a file the test writes), the second
process may read the session but never write it: merely opening it adds no "interrupted" result to the
live call, its run is refused `session_busy` naming the first process, and the first run ends with
exactly one result per call. Once the first is done (or killed with SIGKILL) the second takes the
session over — catching up with what the first wrote, repairing what a dead one left — and runs on a
model that answers 400 to any history with an unanswered call, as OpenAI-style servers do.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException

from lsp_agent.providers.scripted import Script
from tests.e2e.conftest import TIMEOUT, Editor, eventually
from tests.e2e.servers import Servers
from tests.e2e.test_lsp_steering import messages
from tests.helpers import call, reply

#: a tool call that stays live until the test writes `release` into the workspace
GATE_TOOL = ("import os, time\nopen('tool.started', 'w').write('1')\n"
             "while not os.path.exists('release'):\n    time.sleep(0.05)\nprint('released')\n")
#: any unanswered call is a 400, like an OpenAI-style server
STRICT = Script(label="strict", replies=[reply(text="ok")], repeat_last=True, reject_unanswered_calls=True)


def gated_script() -> Script:
    return Script(label="gated", replies=[
        reply(call("run_command", command="python gate_tool.py", timeout_s=120)), reply(text="first done")],
        reject_unanswered_calls=True)


@pytest_asyncio.fixture
async def servers(tmp_path: Path) -> AsyncIterator[Servers]:
    started = Servers(tmp_path)
    yield started
    await started.close()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "gate_tool.py").write_text(GATE_TOOL, encoding="utf-8")
    return workspace


def server_pid(editor: Editor) -> int:
    process = editor.client._server
    assert process is not None
    return process.pid


async def tool_running(root: Path) -> None:
    await eventually(lambda: asyncio.sleep(0, (root / "tool.started").exists()), what="the tool started")


def results_per_call(history: list[dict[str, Any]]) -> tuple[list[str], Counter[str]]:
    calls = [p["callID"] for m in history for p in m["parts"] if p["type"] == "tool_call"]
    results = Counter(p["callID"] for m in history for p in m["parts"] if p["type"] == "tool_result")
    return calls, results


async def first_runs_a_live_call(servers: Servers, root: Path) -> tuple[Editor, str, str]:
    first = await servers.start(root, gated_script())
    started = await first.run("run the gate tool")
    await tool_running(root)
    return first, started["sessionID"], started["generation"]


async def test_a_second_server_reads_a_live_session_but_neither_repairs_nor_runs_it(
        servers: Servers, root: Path) -> None:
    first, sid, generation = await first_runs_a_live_call(servers, root)
    second = await servers.start(root, STRICT)

    # Opening the session reads it: the live call is there, unanswered — no "interrupted" result.
    seen = await messages(second, sid)
    calls, results = results_per_call(seen)
    assert len(calls) == 1 and not results, seen

    with pytest.raises(JsonRpcException) as busy:
        await second.run("let me run it", sessionID=sid)
    data = busy.value.data
    assert busy.value.code == -32009 and data["kind"] == "session_busy" and data["status"] == 409, busy.value
    assert data["owner"]["pid"] == server_pid(first) and data["owner"]["host"], data
    assert f"pid {server_pid(first)}" in busy.value.message
    assert [e for e in second.events if e["event"]["type"] == "run_finish"] == []
    # and the second's session list says so before anyone tries: running, in the first process
    (listed,) = [s for s in (await second.request("agent/sessions", {}))["sessions"] if s["sessionID"] == sid]
    assert listed["state"] == "running" and "generation" not in listed, listed
    assert listed["owner"]["pid"] == server_pid(first) and listed["owner"]["host"], listed
    cli = await asyncio.create_subprocess_exec(sys.executable, "-m", "lsp_agent", "session", "list", "--workspace",
                                               str(root), "--json", stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(cli.communicate(), TIMEOUT)
    (row,) = [s for s in json.loads(out)["sessions"] if s["sessionID"] == sid]
    assert row["state"] == "running" and row["ownerPid"] == server_pid(first), row

    (root / "release").write_text("go", encoding="utf-8")
    finish = await first.finished(generation)
    assert finish["stopReason"] == "final", finish
    (listed,) = [s for s in (await second.request("agent/sessions", {}))["sessions"] if s["sessionID"] == sid]
    assert listed["state"] == "idle" and "owner" not in listed, listed
    calls, results = results_per_call(await messages(first, sid))
    assert results == Counter(calls), "each call has exactly one result"
    (result,) = [p for m in await messages(first, sid) for p in m["parts"] if p["type"] == "tool_result"]
    assert result["ok"] and "released" in result["output"], result

    # The first is done with it: the second runs there now, on the history the first wrote (its own copy,
    # loaded mid-run with the call unanswered, would be a 400 from this model).
    started = await second.run("my turn", sessionID=sid)
    assert (await second.finished(started["generation"]))["stopReason"] == "final"
    history = await messages(second, sid)
    calls, results = results_per_call(history)
    assert results == Counter(calls) and len(calls) == 1
    texts = [p.get("text") for m in history for p in m["parts"] if p["type"] == "text"]
    assert "first done" in texts and "my turn" in texts


async def test_after_kill_9_of_the_owner_the_second_server_takes_over_and_repairs(
        servers: Servers, root: Path) -> None:
    first, sid, _ = await first_runs_a_live_call(servers, root)
    second = await servers.start(root, STRICT)
    assert results_per_call(await messages(second, sid))[1] == Counter()  # read, not repaired

    await servers.kill(first)
    started = await second.run("go on", sessionID=sid)
    assert (await second.finished(started["generation"]))["stopReason"] == "final"
    history = await messages(second, sid)
    calls, results = results_per_call(history)
    assert len(calls) == 1 and results == Counter(calls), history
    (result,) = [p for m in history for p in m["parts"] if p["type"] == "tool_result"]
    assert not result["ok"] and "interrupted" in result["output"]


async def start_cli(root: Path, tmp_path: Path, session_id: str, *more: str) -> asyncio.subprocess.Process:
    script = tmp_path / "cli-script.json"
    script.write_text(STRICT.model_dump_json(), encoding="utf-8")
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lsp_agent", "run", "from the terminal", "--workspace", str(root), "--session",
        session_id, "--model", "scripted/cli", "--script", str(script), "--json", *more,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=dict(os.environ))


async def cli_ended(process: asyncio.subprocess.Process, err_before: bytes = b"") -> tuple[
        int, list[dict[str, Any]], str]:
    out, err = await asyncio.wait_for(process.communicate(), TIMEOUT * 2)
    assert process.returncode is not None
    lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    return process.returncode, lines, (err_before + err).decode()


async def cli_run(root: Path, tmp_path: Path, session_id: str) -> tuple[int, list[dict[str, Any]], str]:
    return await cli_ended(await start_cli(root, tmp_path, session_id))


async def test_the_cli_beside_a_server_running_the_session_is_refused_clearly(
        servers: Servers, root: Path, tmp_path: Path) -> None:
    first, sid, generation = await first_runs_a_live_call(servers, root)

    code, lines, stderr = await cli_run(root, tmp_path, sid)
    assert code == 4, (code, lines, stderr)
    assert "Traceback" not in stderr and f"pid {server_pid(first)}" in stderr and "another lsp-agent" in stderr
    error, finish = lines[-2], lines[-1]
    assert error["type"] == "error" and error["error"]["kind"] == "session_busy", lines
    assert finish["type"] == "run_finish" and finish["stopReason"] == "error", finish
    assert finish["error"]["kind"] == "session_busy" and finish["verification"] == "not_run", finish
    calls, results = results_per_call(await messages(first, sid))
    assert len(calls) == 1 and not results  # the CLI neither repaired nor wrote the session

    (root / "release").write_text("go", encoding="utf-8")
    assert (await first.finished(generation))["stopReason"] == "final"
    code, lines, stderr = await cli_run(root, tmp_path, sid)  # the server is done with it: the CLI may run
    assert code == 0 and lines[-1]["stopReason"] == "final", (code, lines[-3:], stderr)
    calls, results = results_per_call(await messages(first, sid))
    assert results == Counter(calls) and len(calls) == 1


async def test_the_cli_asked_to_wait_runs_once_the_server_is_done_with_the_session(
        servers: Servers, root: Path, tmp_path: Path) -> None:
    first, sid, generation = await first_runs_a_live_call(servers, root)
    process = await start_cli(root, tmp_path, sid, "--wait-for-session", "120")
    assert process.stderr is not None
    told = b""
    while b"waiting up to 120 s" not in told:  # it says why it waits (after any start-up notice), then waits
        line = await asyncio.wait_for(process.stderr.readline(), TIMEOUT)
        assert line, told
        told += line
    assert f"pid {server_pid(first)}".encode() in told, told
    assert process.returncode is None

    (root / "release").write_text("go", encoding="utf-8")
    assert (await first.finished(generation))["stopReason"] == "final"
    code, lines, stderr = await cli_ended(process, told)
    assert code == 0 and lines[-1]["stopReason"] == "final", (code, lines[-3:], stderr)
    calls, results = results_per_call(await messages(first, sid))
    assert results == Counter(calls) and len(calls) == 1


async def test_an_acp_prompt_beside_a_server_running_the_session_is_refused_session_busy(
        servers: Servers, root: Path, tmp_path: Path) -> None:
    from acp import RequestError, text_block

    from tests.acp.client import RecordingClient, acp_agent, write_script

    first, sid, generation = await first_runs_a_live_call(servers, root)
    client = RecordingClient()
    async with acp_agent(client, write_script(tmp_path / "acp.json", STRICT)) as (conn, _):
        await asyncio.wait_for(conn.load_session(cwd=str(root), session_id=sid), TIMEOUT)  # reading is fine
        with pytest.raises(RequestError) as busy:
            await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("from the ACP client")]), TIMEOUT)
        data: Any = busy.value.data
        assert busy.value.code == -32009 and data["kind"] == "session_busy", busy.value
        assert data["owner"]["pid"] == server_pid(first)
        calls, results = results_per_call(await messages(first, sid))
        assert len(calls) == 1 and not results  # loading it repaired nothing

        (root / "release").write_text("go", encoding="utf-8")
        assert (await first.finished(generation))["stopReason"] == "final"
        answer = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("now mine")]), TIMEOUT)
        assert answer.stop_reason == "end_turn"
    calls, results = results_per_call(await messages(first, sid))
    assert results == Counter(calls) and len(calls) == 1
