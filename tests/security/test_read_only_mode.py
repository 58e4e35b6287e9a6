"""Read-only mode keeps the workspace unchanged against the agent's own edit tools too.

The sandbox makes commands obey the mode; here the model goes around it with apply_patch (both
forms: a patch and an exact replacement) and write_file, headless and through ACP's "Read only"
mode. Every file stays as it was, the model reads a refusal that names the mode and how the user
changes it, and the session goes on (a read after the refusals works, the turn ends normally).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from acp import text_block

from lsp_agent.providers.scripted import Script, ScriptedCall, ScriptedReply
from tests.acp.client import RecordingClient, acp_agent, write_script

CANARY_TEXT = "unchanged canary 6f1e2a\n"
PATCH = ("*** Begin Patch\n*** Update File: keep.txt\n@@\n-unchanged canary 6f1e2a\n+patched\n"
         "*** Add File: added.txt\n+x\n*** End Patch\n")
TIMEOUT = 120


def _edits() -> list[ScriptedReply]:
    calls = [ScriptedCall(name="apply_patch", arguments={"patch": PATCH}),
             ScriptedCall(name="apply_patch", arguments={"path": "keep.txt", "old_text": "unchanged",
                                                         "new_text": "changed"}),
             ScriptedCall(name="write_file", arguments={"path": "new.txt", "content": "x\n"}),
             ScriptedCall(name="read_file", arguments={"path": "keep.txt"})]
    return [*(ScriptedReply(tool_calls=[call]) for call in calls), ScriptedReply(text="done")]


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "keep.txt").write_text(CANARY_TEXT, encoding="utf-8")
    script = write_script(tmp_path / "script.json", Script(label="read-only", replies=_edits()))
    return root, script


def _assert_unchanged(root: Path) -> None:
    assert sorted(p.name for p in root.iterdir() if p.name != ".lsp-agent") == ["keep.txt"]
    assert (root / "keep.txt").read_text(encoding="utf-8") == CANARY_TEXT


def _assert_refused(outputs: list[str]) -> None:
    refusals, read = outputs[:3], outputs[3]
    for text in refusals:
        assert "read-only mode" in text and "--sandbox workspace-write" in text, text
        assert text.startswith("ERROR: refused: "), text
    assert "unchanged canary" in read  # the session went on: the next call ran


async def test_headless_read_only_mode_refuses_every_edit_tool(tmp_path: Path, isolated_state: Path) -> None:
    root, script = _workspace(tmp_path)
    argv = [sys.executable, "-m", "lsp_agent", "run", "Edit keep.txt.", "--workspace", str(root),
            "--model", "scripted/test", "--script", str(script), "--json", "--sandbox", "read-only"]
    done = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=TIMEOUT,
                                   check=False)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    [finish] = [e for e in events if e.get("type") == "run_finish"]
    assert finish["stopReason"] == "final", done.stderr
    uses = [e["part"] for e in events if e.get("type") == "tool_use"]
    finished = [u for u in uses if u["state"].get("status") in ("completed", "error")]
    _assert_refused([str(u["state"].get("output", "")) for u in finished])
    _assert_unchanged(root)


def _text_of(update: Any) -> str:
    return "".join(getattr(getattr(c, "content", None), "text", "") or "" for c in (update.content or []))


async def test_acp_read_only_mode_refuses_every_edit_tool(tmp_path: Path, isolated_state: Path) -> None:
    root, script = _workspace(tmp_path)
    client = RecordingClient()
    async with acp_agent(client, script) as (conn, _):
        session = await conn.new_session(cwd=str(root))
        await conn.set_session_mode(session_id=session.session_id, mode_id="read-only")
        result = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("edit")]),
                                        TIMEOUT)
    assert result.stop_reason == "end_turn"
    finals = [u for u in client.of("tool_call_update") if u.status in ("completed", "failed")]
    assert [u.status for u in finals] == ["failed", "failed", "failed", "completed"]
    _assert_refused([_text_of(u) for u in finals])
    assert client.writes == []  # nothing went to the editor's buffers either
    _assert_unchanged(root)
