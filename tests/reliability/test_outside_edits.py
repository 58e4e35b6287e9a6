"""An outside edit after the check downgrades a headless run, as the language server's watcher does.

Only the language server watches the workspace. A run of the CLI (and so of every eval attempt) or of
ACP has no watcher: a user's editor or another program rewriting the checked file after the check used
to leave the run `final / verified`. Driven through the real `lsp-agent run` and `lsp-agent acp` on
the scripted model, with a real check program; the test process is the outside writer.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import text_block
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from lsp_agent.providers.scripted import Script, ScriptedCall, ScriptedReply
from lsp_agent.settings.paths import workspace_dir
from lsp_agent.store.db import Store
from tests.acp.client import RecordingClient, acp_agent, write_script

TIMEOUT = 180
#: how long the model "thinks" after the check: the window in which the test, reacting to the check's
#: event on the stream, writes the file (the write itself takes milliseconds)
THINK_MS = 10_000
#: a check that passes while `a.py` holds what the agent left there; the report it leaves behind is an
#: artifact of the check's own run that must never read as an outside edit
CHECK = ("import sys; sys.path.insert(0, '.'); import a; open('report.txt', 'w').write(str(a.x)); "
         "sys.exit(0 if a.x == 1 else 1)")
CHANGE = "python3 -c \"print('listing')\""


def workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / ".lsp-agent").mkdir(parents=True)
    (ws / "a.py").write_text("x = 1\n", encoding="utf-8")
    config = f'[[tools.verify]]\nkind = "test"\nargv = {json.dumps([sys.executable, "-c", CHECK])}\n'
    (ws / ".lsp-agent" / "config.toml").write_text(config, encoding="utf-8")
    return ws


def _verified_by(event: dict[str, Any]) -> bool:
    part = event.get("part") or {}
    return (event.get("type") == "tool_use" and part.get("tool") == "verify_project"
            and part.get("state", {}).get("status") == "completed")


def run_cli(tmp_path: Path, outside_edit: bool) -> dict[str, Any]:
    """The run, with the test rewriting a.py as soon as the check's result is on the stream."""
    ws = workspace(tmp_path)
    script = write_script(tmp_path / "script.json", Script(label="outside", replies=[
        ScriptedReply(tool_calls=[ScriptedCall(name="verify_project", arguments={})]),
        ScriptedReply(text="done: verified", delay_ms=THINK_MS if outside_edit else 0)]))
    return _stream(ws, script, _verified_by if outside_edit else None)


def _stream(ws: Path, script: Path, edit_on: Callable[[dict[str, Any]], bool] | None,
            *extra: str) -> dict[str, Any]:
    """The real CLI; the test rewrites a.py when `edit_on` first matches an event on the stream."""
    outside_edit = edit_on is not None
    proc = subprocess.Popen([sys.executable, "-m", "lsp_agent", "run", "check it", "--workspace", str(ws),
                             "--model", "scripted/t", "--script", str(script), "--json", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
    assert proc.stdout is not None
    edited = False
    finish: dict[str, Any] | None = None
    try:
        for line in proc.stdout:
            event = json.loads(line)
            if edit_on is not None and not edited and edit_on(event):
                (ws / "a.py").write_text("x = 2\n", encoding="utf-8")  # the outside process
                edited = True
            if event.get("type") == "run_finish":
                finish = event
        proc.wait(timeout=TIMEOUT)
    finally:
        proc.kill()
        stderr = proc.stderr.read() if proc.stderr else ""
        proc.wait()
    assert finish is not None, stderr[-3000:]
    assert edited is outside_edit, "the check's result never reached the stream"
    return finish


def test_an_outside_edit_after_the_check_downgrades_a_cli_run(tmp_path: Path) -> None:
    finish = run_cli(tmp_path, outside_edit=True)

    assert finish["stopReason"] == "final"
    assert finish["verification"] == "not_run", finish
    assert finish["invalidatedBy"]["by"] == "outside_process"
    assert finish["invalidatedBy"]["paths"] == ["a.py"]
    assert "a change outside the agent" in finish["verificationReason"]
    assert "it had verified" in finish["verificationReason"]


def test_without_an_outside_edit_the_check_stands_despite_its_own_artifacts(tmp_path: Path) -> None:
    finish = run_cli(tmp_path, outside_edit=False)

    assert (finish["stopReason"], finish["verification"]) == ("final", "verified"), finish
    assert finish.get("invalidatedBy") is None
    assert (tmp_path / "ws" / "report.txt").read_text(encoding="utf-8") == "1"  # the check's artifact


def test_an_outside_edit_during_a_later_run_on_the_session_downgrades_it(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    script = write_script(tmp_path / "script.json", Script(label="outside later", replies=[
        ScriptedReply(tool_calls=[ScriptedCall(name="verify_project", arguments={})]),
        ScriptedReply(text="done: verified"),
        ScriptedReply(text="still verified", delay_ms=THINK_MS)]))
    first = _stream(ws, script, None)
    assert first["verification"] == "verified", first

    later = _stream(ws, script, lambda e: e.get("type") == "step_start", "--session", first["sessionID"])

    assert later["verification"] == "not_run", later
    assert later["invalidatedBy"]["by"] == "outside_process"
    assert later["invalidatedBy"]["paths"] == ["a.py"]


class OutsideWriter(RecordingClient):
    """Allows the check; while the next command waits for its approval, rewrites the checked file
    (as the user's editor would) and denies the command, so that no write of the agent explains it."""

    def __init__(self, target: Path) -> None:
        super().__init__(answer="allow_once")
        self.target = target

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.permissions.append((tool_call, [o.option_id for o in options]))
        if len(self.permissions) == 1:
            return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow_once"))
        self.target.write_text("x = 2\n", encoding="utf-8")
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


async def test_an_outside_edit_after_the_check_downgrades_an_acp_run(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    script = write_script(tmp_path / "script.json", Script(label="outside acp", replies=[
        ScriptedReply(tool_calls=[ScriptedCall(name="verify_project", arguments={})]),
        ScriptedReply(tool_calls=[ScriptedCall(name="run_command", arguments={"command": CHANGE})]),
        ScriptedReply(text="done: verified")]))
    client = OutsideWriter(ws / "a.py")
    async with acp_agent(client, script, "approvalPolicy=untrusted") as (conn, _):
        session = await conn.new_session(cwd=str(ws))
        result = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("check")]),
                                        TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert len(client.permissions) == 2, client.permissions
    store = Store(workspace_dir(ws) / "store.db")
    [finish] = store.events(session.session_id, "run.finish")
    store.close()
    assert finish["verification"] == "not_run", finish
    assert finish["invalidatedBy"]["by"] == "outside_process"
    assert finish["invalidatedBy"]["paths"] == ["a.py"]
