"""`lsp-agent acp` over stdio, driven by the ACP SDK's client side with the scripted model."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block

from lsp_agent.cli.demo import PROMPT, SCENARIOS, make_workspace
from lsp_agent.providers.scripted import Script, ScriptedCall, ScriptedReply
from lsp_agent.settings.paths import workspace_dir
from lsp_agent.store.db import Store
from tests.acp.client import RecordingClient, acp_agent, write_script
from tests.e2e.conftest import StartEditor
from tests.helpers import wait_for

TOUCH = "python3 -c \"open('made.txt', 'w').write('x')\""
SLEEP = "python3 -c \"import time; time.sleep(30)\""
#: a command that runs until the test writes `gate` in the workspace: a generation in flight for as long
#: as the test needs, however slow the machine
GATED = "python3 -c \"import os, time; [time.sleep(0.02) for _ in iter(lambda: os.path.exists('gate'), True)]\""
TIMEOUT = 60
IDS = re.compile(r"\b(prt|msg|ses)_[0-9a-z]+")


def _script(tmp_path: Path, *replies: ScriptedReply) -> Path:
    return write_script(tmp_path / "script.json", Script(label="acp test", replies=list(replies)))


def _call(name: str, **arguments: Any) -> ScriptedCall:
    return ScriptedCall(name=name, arguments=arguments)


@pytest.fixture
def demo_root() -> Any:
    import shutil

    root = make_workspace()
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _records(root: Path, session_id: str) -> list[tuple[Any, ...]]:
    """A session's stored transcript without IDs: role, and each part's type, tool, ok and text."""
    store = Store(workspace_dir(root) / "store.db")
    try:
        out = []
        for message in store.messages(session_id):
            parts = tuple((p.type, getattr(p, "name", None), getattr(p, "ok", None),
                           IDS.sub("<id>", getattr(p, "text", None) or getattr(p, "output", None)
                                   or getattr(p, "arguments", None) or ""))
                          for p in message.parts)
            out.append((message.role.value, parts))
        return out
    finally:
        store.close()


async def test_full_run_edits_through_fs_streams_updates_and_ends_verified_like_the_cli_and_lsp(
        tmp_path: Path, demo_root: Path, start_editor: StartEditor) -> None:
    script = write_script(tmp_path / "demo.json", SCENARIOS["ok"][0])
    client = RecordingClient()
    async with acp_agent(client, script) as (conn, _):
        session = await conn.new_session(cwd=str(demo_root))
        answer = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[text_block(PROMPT)]), TIMEOUT)
    record = answer.field_meta["lspAgent"]
    assert (answer.stop_reason, record["verification"], record["stopReason"]) == ("end_turn", "verified", "final")
    target = str(demo_root.resolve() / "result.txt")
    assert client.writes == [(target, "4")]  # the edit went through fs/write_text_file
    assert target in client.reads
    assert (demo_root / "result.txt").read_text() == "4"
    starts = client.of("tool_call")
    assert [(u.kind, u.status) for u in starts] == [("read", "in_progress"), ("edit", "in_progress"),
                                                   ("execute", "in_progress")]
    assert starts[1].locations[0].path == target
    done = client.of("tool_call_update")
    assert [u.status for u in done] == ["completed"] * 3
    diff = done[1].content[0]
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", target, "5", "4")
    assert "verify passed" in done[2].content[0].content.text  # command output as text
    assert "It holds 5" in client.text("agent_thought_chunk")
    assert client.text().rstrip().endswith("final · verification verified")  # the last message says it too

    # The same scripted task through the CLI: same outcome, same store records.
    cli_root = make_workspace()
    try:
        run = subprocess.run([sys.executable, "-m", "lsp_agent", "run", PROMPT, "--workspace", str(cli_root),
                              "--model", "scripted/test", "--script", str(script), "--json"],
                             capture_output=True, text=True, timeout=TIMEOUT, check=False)
        finish = json.loads(run.stdout.strip().splitlines()[-1])
        assert (finish["stopReason"], finish["verification"]) == ("final", "verified")
        assert _records(cli_root, finish["sessionID"]) == _records(demo_root, session.session_id)
    finally:
        import shutil

        shutil.rmtree(cli_root, ignore_errors=True)

    # ... and over LSP (the language server, its edits through workspace/applyEdit): the same again.
    lsp_root = make_workspace()
    try:
        editor = await start_editor(lsp_root, init_options={"model": "scripted/test", "script": str(script)})
        started = await editor.run(PROMPT)
        lsp_finish = await editor.finished(started["generation"], timeout=TIMEOUT)
        assert (lsp_finish["stopReason"], lsp_finish["verification"]) == ("final", "verified")
        assert (lsp_root / "result.txt").read_text() == "4"
        assert _records(lsp_root, started["sessionID"]) == _records(demo_root, session.session_id)
    finally:
        import shutil

        shutil.rmtree(lsp_root, ignore_errors=True)


async def test_edits_go_to_disk_when_the_client_offers_no_fs(tmp_path: Path, demo_root: Path) -> None:
    script = write_script(tmp_path / "demo.json", SCENARIOS["ok"][0])
    client = RecordingClient()
    async with acp_agent(client, script, fs=False) as (conn, _):
        session = await conn.new_session(cwd=str(demo_root))
        answer = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block(PROMPT)]),
                                        TIMEOUT)
    assert (answer.stop_reason, answer.field_meta["lspAgent"]["verification"]) == ("end_turn", "verified")
    assert client.writes == [] and client.reads == []
    assert (demo_root / "result.txt").read_text() == "4"


@pytest.mark.parametrize("answer", ["allow_once", "deny"])
async def test_permission_request_is_the_approval_front_end(tmp_path: Path, answer: str) -> None:
    script = _script(tmp_path, ScriptedReply(tool_calls=[_call("run_command", command=TOUCH)]),
                     ScriptedReply(text="done"))
    client = RecordingClient(answer=answer)
    async with acp_agent(client, script, "approvalPolicy=untrusted") as (conn, _):
        session = await conn.new_session(cwd=str(tmp_path))
        assert session.modes is not None and session.modes.current_mode_id == "untrusted"
        result = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("touch")]),
                                        TIMEOUT)
    assert result.stop_reason == "end_turn"
    [(call, options)] = client.permissions
    assert options == ["allow_once", "allow_session", "deny"]
    # "allow always" says what it grants: exactly this command line
    assert client.option_names[0]["allow_session"] == \
        f"Allow for this session: exactly `{shlex.join(shlex.split(TOUCH))}` in run_command"
    assert call.kind == "execute" and "made.txt" in call.title
    # The permission names the tool call the client was told of just before.
    starts = client.of("tool_call")
    assert starts[0].tool_call_id == call.tool_call_id and starts[0].status == "pending"
    [final] = [u for u in client.of("tool_call_update") if u.status in ("completed", "failed")]
    assert final.tool_call_id == call.tool_call_id
    assert final.status == ("completed" if answer == "allow_once" else "failed")
    assert (tmp_path / "made.txt").exists() is (answer == "allow_once")
    store = Store(workspace_dir(tmp_path) / "store.db")
    [event] = store.events(session.session_id, "approval")
    store.close()
    assert (event["decision"], event["who"]) == (answer, "user (ACP client)")


async def test_set_mode_switches_the_approval_policy(tmp_path: Path) -> None:
    script = _script(tmp_path, ScriptedReply(tool_calls=[_call("run_command", command=TOUCH)]),
                     ScriptedReply(text="done"))
    client = RecordingClient(answer=None)  # the client cancels the question: a deny
    async with acp_agent(client, script) as (conn, _):
        session = await conn.new_session(cwd=str(tmp_path))
        assert session.modes is not None and session.modes.current_mode_id == "on-request"
        with pytest.raises(RequestError) as bad:
            await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
        assert bad.value.code == -32602
        await conn.set_session_mode(session_id=session.session_id, mode_id="untrusted")
        result = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("touch")]),
                                        TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert [u.current_mode_id for u in client.of("current_mode_update")] == ["untrusted"]
    assert len(client.permissions) == 1 and not (tmp_path / "made.txt").exists()


@pytest.mark.parametrize("mode_id", ["ask", "plan"])
async def test_ask_and_plan_modes_are_offered_and_refuse_edits(tmp_path: Path, mode_id: str) -> None:
    # The editor's Plan and Ask, from the same table: an ACP client gets them too, enforced by the server.
    script = _script(tmp_path, ScriptedReply(tool_calls=[_call("write_file", path="made.txt", content="x\n")]),
                     ScriptedReply(tool_calls=[_call("run_command", command=TOUCH)]),
                     ScriptedReply(text="done"))
    client = RecordingClient()  # would allow anything it were asked: the modes never ask
    async with acp_agent(client, script) as (conn, _):
        session = await conn.new_session(cwd=str(tmp_path))
        assert session.modes is not None
        assert {"ask", "plan"} <= {m.id for m in session.modes.available_modes}
        await conn.set_session_mode(session_id=session.session_id, mode_id=mode_id)
        result = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("write")]),
                                        TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert [u.current_mode_id for u in client.of("current_mode_update")] == [mode_id]
    assert client.permissions == [] and not (tmp_path / "made.txt").exists()
    assert [u.status for u in client.of("tool_call_update") if u.status in ("completed", "failed")] == \
        ["failed", "failed"]


async def test_cancel_mid_tool_ends_the_turn_cancelled_and_the_agent_lives_on(tmp_path: Path) -> None:
    script = _script(tmp_path, ScriptedReply(tool_calls=[_call("run_command", command=SLEEP)]),
                     ScriptedReply(text="after the cancel"))
    client = RecordingClient()
    async with acp_agent(client, script, "approvalPolicy=never") as (conn, proc):
        session = await conn.new_session(cwd=str(tmp_path))
        turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("sleep")]))
        await wait_for(lambda: bool(client.of("tool_call")), timeout=TIMEOUT)  # the command started
        started = asyncio.get_running_loop().time()
        await conn.cancel(session_id=session.session_id)
        result = await asyncio.wait_for(turn, 20)
        elapsed = asyncio.get_running_loop().time() - started
        assert result.stop_reason == "cancelled" and elapsed < 10
        assert result.field_meta["lspAgent"]["stopReason"] == "cancelled"
        assert client.of("tool_call_update")[-1].status == "failed"
        again = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("go on")]),
                                       TIMEOUT)
        assert again.stop_reason == "end_turn" and proc.returncode is None


async def test_load_replays_the_stored_session_in_a_new_process(tmp_path: Path, demo_root: Path) -> None:
    script = write_script(tmp_path / "demo.json", SCENARIOS["ok"][0])
    first = RecordingClient()
    async with acp_agent(first, script) as (conn, _):
        session = await conn.new_session(cwd=str(demo_root))
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block(PROMPT)]), TIMEOUT)
    later = RecordingClient()
    async with acp_agent(later, script) as (conn, _):
        with pytest.raises(RequestError) as unknown:
            await conn.load_session(cwd=str(demo_root), session_id="ses_nope")
        assert unknown.value.code == -32004
        loaded = await conn.load_session(cwd=str(demo_root), session_id=session.session_id)
        assert loaded is not None
    kinds = later.kinds(session.session_id)
    assert kinds[0] == "user_message_chunk" and later.of("user_message_chunk")[0].content.text == PROMPT
    assert [u.title for u in later.of("tool_call")] == ["read_file", "apply_patch", "verify_project"]
    assert [u.status for u in later.of("tool_call_update")] == ["completed"] * 3
    assert "verify_project passed" in later.text()
    assert "It holds 5" in later.text("agent_thought_chunk")


async def test_a_prompt_during_a_generation_is_queued_and_runs_next(tmp_path: Path) -> None:
    script = _script(tmp_path, ScriptedReply(tool_calls=[_call("run_command", command=GATED)]),
                     ScriptedReply(text="first answer"), ScriptedReply(text="second answer"))
    client = RecordingClient()
    async with acp_agent(client, script, "approvalPolicy=never") as (conn, _):
        session = await conn.new_session(cwd=str(tmp_path))
        one = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("one")]))
        await wait_for(lambda: bool(client.of("tool_call")), timeout=TIMEOUT)  # the first generation runs
        two = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("two")]))
        await wait_for(lambda: any(m == "lsp_agent/queue_changed" for m, _ in client.ext), timeout=TIMEOUT)
        (tmp_path / "gate").write_text("go")
        first, second = await asyncio.wait_for(asyncio.gather(one, two), TIMEOUT)
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert first.field_meta["lspAgent"]["generation"] != second.field_meta["lspAgent"]["generation"]
    text = client.text()
    assert text.index("first answer") < text.index("second answer")
    changes = [p for m, p in client.ext if m == "lsp_agent/queue_changed"]
    assert changes and changes[0]["items"][0]["text"] == "two"


async def test_steer_extension_returns_a_receipt(tmp_path: Path) -> None:
    script = _script(tmp_path, ScriptedReply(tool_calls=[_call("run_command", command=GATED)]),
                     ScriptedReply(text="steered"))
    client = RecordingClient()
    async with acp_agent(client, script, "approvalPolicy=never") as (conn, _):
        session = await conn.new_session(cwd=str(tmp_path))
        with pytest.raises(RequestError) as idle:
            await conn.ext_method("lsp_agent/steer", {"sessionId": session.session_id, "text": "x"})
        assert idle.value.code == -32009
        turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("one")]))
        await wait_for(lambda: bool(client.of("tool_call")), timeout=TIMEOUT)  # the generation runs
        answer = await conn.ext_method("lsp_agent/steer", {"sessionId": session.session_id, "text": "use tabs",
                                                           "clientId": "c1"})
        (tmp_path / "gate").write_text("go")
        result = await asyncio.wait_for(turn, TIMEOUT)
    assert answer["receipt"]["clientID"] == "c1"
    assert answer["receipt"]["status"] in ("accepted", "applied")
    assert result.stop_reason == "end_turn"
    assert any(m == "lsp_agent/receipt" and p["receipt"]["clientID"] == "c1" for m, p in client.ext)


async def test_bad_input_gets_json_rpc_errors_and_the_agent_stays_up(tmp_path: Path) -> None:
    script = _script(tmp_path, ScriptedReply(text="fine"))
    client = RecordingClient()
    async with acp_agent(client, script) as (conn, proc):
        raw = conn._conn  # the SDK's JSON-RPC connection: send what a typed call cannot
        newer = await conn.initialize(protocol_version=99)  # a version we do not speak: ours is offered
        assert newer.protocol_version == 1 and newer.agent_capabilities.load_session
        assert newer.agent_capabilities.prompt_capabilities.embedded_context
        with pytest.raises(RequestError) as unknown:
            await conn.prompt(session_id="ses_nope", prompt=[text_block("x")])
        assert unknown.value.code == -32004 and unknown.value.data["kind"] == "unknown_session"
        with pytest.raises(RequestError) as malformed:
            await raw.send_request("session/prompt", {"prompt": "not a list"})
        assert malformed.value.code == -32602
        with pytest.raises(RequestError) as no_method:
            await raw.send_request("session/fly", {})
        assert no_method.value.code == -32601
        with pytest.raises(RequestError) as relative:
            await conn.new_session(cwd="relative/dir")
        assert relative.value.code == -32602
        session = await conn.new_session(cwd=str(tmp_path))
        with pytest.raises(RequestError) as empty:
            await conn.prompt(session_id=session.session_id, prompt=[text_block("   ")])
        assert empty.value.code == -32602
        with pytest.raises(RequestError) as image:
            await raw.send_request("session/prompt", {"sessionId": session.session_id, "prompt": [
                {"type": "image", "data": "AAAA", "mimeType": "image/png"}]})
        assert image.value.code == -32602
        ok = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("hi")]), TIMEOUT)
        assert ok.stop_reason == "end_turn" and proc.returncode is None


async def test_step_limit_is_max_turn_requests_and_a_provider_error_is_a_json_rpc_error(tmp_path: Path) -> None:
    from lsp_agent.providers.scripted import ScriptedError

    (tmp_path / "a.txt").write_text("a\n")
    script = _script(tmp_path, ScriptedReply(tool_calls=[_call("read_file", path="a.txt")]),
                     ScriptedReply(error=ScriptedError(message="the server fell over", status=500)))
    client = RecordingClient()
    async with acp_agent(client, script, "maxSteps=1") as (conn, proc):
        session = await conn.new_session(cwd=str(tmp_path))
        limited = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("read")]),
                                         TIMEOUT)
        assert limited.stop_reason == "max_turn_requests"
        assert limited.field_meta["lspAgent"]["verification"] == "not_run"
        with pytest.raises(RequestError) as failed:
            await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("again")]), TIMEOUT)
        assert failed.value.code == -32010 and failed.value.data["lspAgent"]["stopReason"] == "error"
        assert "the server fell over" in str(failed.value)
        assert proc.returncode is None


async def test_mcp_servers_passed_by_the_client_run_through_our_mcp_client(tmp_path: Path) -> None:
    from acp.schema import McpServerStdio

    script = _script(tmp_path, ScriptedReply(tool_calls=[_call("mcp__time__get_current_time", timezone="Etc/UTC")]),
                     ScriptedReply(text="it is now"))
    client = RecordingClient()
    time_server = McpServerStdio(name="time", command=sys.executable, args=["-m", "mcp_server_time"], env=[])
    async with acp_agent(client, script) as (conn, _):
        with pytest.raises(RequestError) as bad_name:
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[
                McpServerStdio(name="no spaces", command=sys.executable, args=[], env=[])])
        assert bad_name.value.code == -32602
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[time_server])
        result = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("time?")]),
                                        TIMEOUT)
    assert result.stop_reason == "end_turn"
    [(call, _)] = client.permissions  # an MCP tool of an untrusted server may change things: asked first
    assert call.kind == "other"
    [done] = [u for u in client.of("tool_call_update") if u.status in ("completed", "failed")]
    assert done.status == "completed"
    assert done.content[0].content.text.startswith("OK: mcp__time__get_current_time returned")


async def test_cancel_withdraws_a_queued_prompt_too(tmp_path: Path) -> None:
    script = _script(tmp_path, ScriptedReply(tool_calls=[_call("run_command", command=GATED)]),
                     ScriptedReply(text="never sent"))
    client = RecordingClient()
    async with acp_agent(client, script, "approvalPolicy=never") as (conn, proc):
        session = await conn.new_session(cwd=str(tmp_path))
        one = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("one")]))
        await wait_for(lambda: bool(client.of("tool_call")), timeout=TIMEOUT)  # the first generation runs
        two = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("two")]))
        await wait_for(lambda: any(m == "lsp_agent/queue_changed" for m, _ in client.ext), timeout=TIMEOUT)
        await conn.cancel(session_id=session.session_id)
        first, second = await asyncio.wait_for(asyncio.gather(one, two), TIMEOUT)
        assert (first.stop_reason, second.stop_reason) == ("cancelled", "cancelled")
        assert second.field_meta == {"lspAgent": {"queued": "withdrawn"}}
        assert proc.returncode is None
    assert "never sent" not in client.text()
    last = [p for m, p in client.ext if m == "lsp_agent/queue_changed"][-1]
    assert [(i["text"], i["status"]) for i in last["items"]] == [("two", "cancelled")]  # not left paused
    store = Store(workspace_dir(tmp_path) / "store.db")
    try:
        prompts = [m for m in store.messages(session.session_id) if m.role.value == "user"]
    finally:
        store.close()
    assert [m.parts[0].text for m in prompts] == ["one"]  # the withdrawn follow-up never became a message
