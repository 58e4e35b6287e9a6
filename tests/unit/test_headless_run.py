"""`lsp-agent run` as a real process: it always ends with a run_finish — on Ctrl-C (SIGINT) during a
slow model or a slow command, when its stdout is closed (`| head -1`) — refuses an unknown session
cleanly, and continues in the fresh session after an automatic handoff."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.settings.paths import workspace_dir
from lsp_agent.store.db import Store
from tests.helpers import git_repo, verify_config
from tests.providers.loopback import LoopbackServer, Reply, agent_command, chat_sse

PY = sys.executable
RUN = [PY, "-m", "lsp_agent", "run"]


def _script(path: Path, replies: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"label": "headless-test", "replies": replies}), encoding="utf-8")
    return path


def _events(stdout: bytes | str) -> list[dict[str, Any]]:
    text = stdout.decode() if isinstance(stdout, bytes) else stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _finishes_recorded(root: Path, session_id: str) -> list[dict[str, Any]]:
    store = Store(workspace_dir(root) / "store.db")
    try:
        return store.events(session_id, "run.finish")
    finally:
        store.close()


async def _until(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


# --- Ctrl-C -------------------------------------------------------------------------------------


@pytest.mark.parametrize("as_json", [True, False])
async def test_ctrl_c_during_a_slow_model_cancels_and_still_reports(tmp_path: Path, as_json: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    server = LoopbackServer()
    await server.start()
    # The model starts answering, then goes silent: only a cancel ends this run.
    opening = chat_sse([{"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Look"}}]}],
                       done=False)
    server.queue(Reply(chunks=[opening], ending="stall"))
    argv = agent_command("task", ws, server.url, "chat")
    if not as_json:
        argv.remove("--json")
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                env={**os.environ, "LSP_AGENT_API_KEY": "k"})
    try:
        await _until(lambda: server.stalled)  # the stream is open, its first chunk sent, and stalled
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await server.close()
    assert time.monotonic() - started < 25  # the stalled stream (an hour) was cut by the cancel
    stderr = err.decode()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "SIGINT: cancelling the run" in stderr
    if as_json:
        events = _events(out)
        finish = events[-1]
        assert [e["type"] for e in events] == ["step_start", "run_finish"]
        assert (finish["stopReason"], finish["verification"], finish["steps"]) == ("cancelled", "not_run", 1)
        session_id = finish["sessionID"]
    else:
        last = out.decode().splitlines()[-1]
        assert last.startswith("── stop: cancelled · verification: not_run · steps 1"), out.decode()
        session_id = last.rsplit("session ", 1)[1]
    assert [f["stopReason"] for f in _finishes_recorded(ws, session_id)] == ["cancelled"]


async def test_ctrl_c_during_a_slow_command_kills_it_and_reports(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    sleeper = "import pathlib, time; pathlib.Path('started').write_text('1'); time.sleep(120)"
    script = _script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": shlex.join(["python3", "-c", sleeper]),
                                                              "timeout_s": 200}}]},
        {"text": "never reached"}])
    proc = await asyncio.create_subprocess_exec(
        *RUN, "sleep", "--workspace", str(ws), "--model", "scripted/t", "--script", str(script), "--json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        await _until(lambda: (ws / "started").exists())
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert time.monotonic() - started < 15  # the 120 s command was killed, not waited for
    assert proc.returncode == 130 and "Traceback" not in err.decode(), err.decode()
    events = _events(out)
    use = next(e for e in events if e["type"] == "tool_use")
    assert use["part"]["state"]["status"] == "error" and use["part"]["state"]["errorKind"] == "cancelled"
    assert events[-1]["type"] == "run_finish" and events[-1]["stopReason"] == "cancelled"
    assert events[-1]["toolErrors"] == 1


# --- a closed stdout, an unknown session -------------------------------------------------------


def test_a_closed_stdout_ends_the_run_cleanly_as_cancelled(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = _script(tmp_path / "s.json", [
        {"text": "listing", "delay_ms": 700, "tool_calls": [{"name": "list_dir", "arguments": {}}]},
        {"text": "more", "tool_calls": [{"name": "list_dir", "arguments": {}}]}, {"text": "done"}])
    command = shlex.join([*RUN, "task", "--workspace", str(ws), "--model", "scripted/t", "--script", str(script),
                          "--json"])
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; {command} | head -1"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1, proc.stderr  # the run's own status (stopped, not final), not a crash
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    (first,) = _events(proc.stdout)
    assert first["type"] == "step_start"
    recorded = _finishes_recorded(ws, first["sessionID"])
    assert [(f["stopReason"], f["steps"]) for f in recorded] == [("cancelled", 1)]
    store = Store(workspace_dir(ws) / "store.db")
    try:
        row = store.session(first["sessionID"])
        assert row is not None and row.active_generation is None
        # The call the model asked for never ran; its result says so (the history stays valid).
        results = [p for m in store.messages(first["sessionID"]) for p in m.tool_results()]
        assert [(r.ok, r.error_kind.value if r.error_kind else None) for r in results] == [(False, "cancelled")]
    finally:
        store.close()


def test_a_closed_stdout_in_transcript_mode_ends_the_same_way(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = _script(tmp_path / "s.json", [
        {"text": "listing", "delay_ms": 700, "tool_calls": [{"name": "list_dir", "arguments": {}}]}, {"text": "done"}])
    command = shlex.join([*RUN, "task", "--workspace", str(ws), "--model", "scripted/t", "--script", str(script)])
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; {command} | head -1"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1 and proc.stdout.startswith("lsp-agent: scripted/t "), proc.stderr  # the header
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    store = Store(workspace_dir(ws) / "store.db")
    try:
        (session_id,) = [row["id"] for row in store.db.execute("SELECT id FROM sessions")]
    finally:
        store.close()
    assert [f["stopReason"] for f in _finishes_recorded(ws, session_id)] == ["cancelled"]


def test_an_unknown_session_is_a_usage_error_without_a_traceback(tmp_path: Path) -> None:
    script = _script(tmp_path / "s.json", [{"text": "hi"}])
    proc = subprocess.run([*RUN, "x", "--workspace", str(tmp_path), "--model", "scripted/t", "--script", str(script),
                           "--session", "ses_nope", "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "no session 'ses_nope' in workspace" in proc.stderr and "Traceback" not in proc.stderr


# --- handoff ------------------------------------------------------------------------------------

HANDOFF_MARKER = "[lsp-agent handoff]"
CHECK = """\
import pathlib, sys
if "X = 2" in pathlib.Path("model.py").read_text():
    print("Success: no issues found in 2 source files")
    sys.exit(0)
print("model.py:1: error: X must be 2  [misc]")
print("Found 1 error in 1 file (checked 2 source files)")
sys.exit(1)
"""


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


#: Three identical failures in the first session (an automatic handoff), then the fix in the fresh one.
HANDOFF_REPLIES = [
    _call("verify_project"), _call("apply_patch", path="model.py", old_text="X = 1", new_text="X = 7"),
    _call("verify_project"), _call("apply_patch", path="model.py", old_text="X = 7", new_text="X = 8"),
    _call("verify_project"),
    {"when": HANDOFF_MARKER, "text": "Handoff: model.py:1 must set X = 2; the check failed 3 times."},
    _call("read_file", path="model.py"), _call("apply_patch", path="model.py", old_text="X = 8", new_text="X = 2"),
    _call("verify_project"), {"text": "Fixed: X = 2, the check passes."},
]


def _handoff_run(tmp_path: Path, max_steps: int) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    ws = git_repo(tmp_path / "ws", {"model.py": "X = 1\n", "check.py": CHECK})
    verify_config(ws, [PY, "check.py"], kind="typecheck", parser="mypy")
    script = _script(tmp_path / "s.json", HANDOFF_REPLIES)
    proc = subprocess.run([*RUN, "fix model.py", "--workspace", str(ws), "--model", "scripted/t", "--script",
                           str(script), "--max-steps", str(max_steps), "--json"],
                          capture_output=True, text=True, timeout=120)
    return proc, _events(proc.stdout)


def test_a_headless_handoff_continues_in_the_fresh_session_within_the_budget(tmp_path: Path) -> None:
    proc, events = _handoff_run(tmp_path, 12)
    assert proc.returncode == 0, proc.stderr
    handed, final = [e for e in events if e["type"] == "run_finish"]
    notice = next(e for e in events if e["type"] == "notice" and e["kind"] == "handoff")
    old, new = notice["data"]["from"], notice["data"]["to"]
    assert (handed["stopReason"], handed["sessionID"], handed["handoffTo"], handed["steps"]) == ("handoff", old, new, 5)
    assert (final["stopReason"], final["verification"], final["sessionID"]) == ("final", "verified", new)
    assert final["previousSessionIDs"] == [old] and "handoffTo" not in final
    # One run: the step numbers go on, the counts cover both sessions, the budget is the run's.
    steps = [(e["sessionID"], e["step"], e["maxSteps"]) for e in events if e["type"] == "step_start"]
    assert steps == [(old, n, 12) for n in range(1, 6)] + [(new, n, 12) for n in range(6, 10)]
    assert (final["steps"], final["toolCalls"], final["toolErrors"]) == (9, 8, 3)
    assert final["filesChanged"] == ["model.py"]
    assert final["verificationCitation"]["sessionID"] == new
    assert events[-1] is final


def test_a_handoff_at_the_last_step_ends_the_run_naming_the_fresh_session(tmp_path: Path) -> None:
    proc, events = _handoff_run(tmp_path, 5)  # the budget is spent exactly at the handoff
    assert proc.returncode == 1, proc.stderr
    (finish,) = [e for e in events if e["type"] == "run_finish"]
    assert finish["stopReason"] == "handoff" and finish["handoffTo"].startswith("ses_") and finish["steps"] == 5


def test_a_handoff_one_step_before_the_limit_continues_for_that_step(tmp_path: Path) -> None:
    proc, events = _handoff_run(tmp_path, 6)
    assert proc.returncode == 1, proc.stderr
    handed, final = [e for e in events if e["type"] == "run_finish"]
    assert (final["stopReason"], final["steps"]) == ("step_limit", 6)
    assert final["sessionID"] == handed["handoffTo"] and final["previousSessionIDs"] == [handed["sessionID"]]
