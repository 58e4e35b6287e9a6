"""One refused call must not poison a session.

The model sends a 20 MB write_file (over limits.write_bytes) or arguments nested 100,000 deep (the
bounded-JSON refusal): the controller refuses them, and they used to stay in the history, so every
later request carried them, went over the context window and stopped with compaction_ineffective —
in that run and in any later run on the session. Here with the real CLI and the scripted model: the
run goes on after the refusal, a second run on the same session (`--session`) works, and a session
stored the old way (the oversized call in its rows) is repaired when it is loaded.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from lsp_agent.core.rejected_calls import OMITTED
from lsp_agent.domain.history import ErrorKind, Message, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.providers.scripted import Script, ScriptedCall, ScriptedReply
from lsp_agent.settings.paths import workspace_dir
from lsp_agent.store.db import Store as SqliteStore
from tests.acp.client import write_script

TIMEOUT = 240
HUGE = 20 * 1024 * 1024
DEEP = "[" * 100_000 + "]" * 100_000


def _run(root: Path, script: Path, prompt: str, session: str | None = None) -> tuple[list[dict[str, Any]], str]:
    argv = [sys.executable, "-m", "lsp_agent", "run", prompt, "--workspace", str(root),
            "--model", "scripted/test", "--script", str(script), "--json"]
    if session is not None:
        argv += ["--session", session]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()], done.stderr


def _finish(events: list[dict[str, Any]], stderr: str) -> dict[str, Any]:
    finishes = [e for e in events if e.get("type") == "run_finish"]
    assert len(finishes) == 1, stderr[-3000:]
    return finishes[0]


def _script(path: Path, first: ScriptedCall) -> Path:
    replies = [ScriptedReply(tool_calls=[first]),
               ScriptedReply(tool_calls=[ScriptedCall(name="write_file", arguments={"path": "small.txt",
                                                                                    "content": "ok\n"})]),
               ScriptedReply(text="done"),
               ScriptedReply(tool_calls=[ScriptedCall(name="read_file", arguments={"path": "small.txt"})]),
               ScriptedReply(text="read it")]
    return write_script(path, Script(label="poison", replies=replies))


async def _both_runs(tmp_path: Path, first: ScriptedCall) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = _script(tmp_path / "script.json", first)
    events, stderr = await asyncio.to_thread(_run, root, script, "Write the files.")
    finish = _finish(events, stderr)
    assert finish["stopReason"] == "final", (finish, stderr[-3000:])
    assert (root / "small.txt").read_text() == "ok\n"  # the run went on past the refusal
    uses = [e["part"] for e in events if e.get("type") == "tool_use"]
    refused = uses[0]["state"]
    assert refused["status"] == "error" and refused["errorKind"] in ("parameter_mismatch", "invalid_json")
    # a second run on the same session: the refused call is in its history, bounded
    events, stderr = await asyncio.to_thread(_run, root, script, "Read it back.", finish["sessionID"])
    again = _finish(events, stderr)
    assert again["stopReason"] == "final", (again, stderr[-3000:])
    store = SqliteStore(workspace_dir(root) / "store.db")
    try:
        calls = [p for m in store.messages(finish["sessionID"]) for p in m.parts if isinstance(p, ToolCallPart)]
    finally:
        store.close()
    assert len(calls[0].arguments) < 4_000, len(calls[0].arguments)
    omitted = json.loads(calls[0].arguments)[OMITTED]
    assert omitted["chars"] >= 200_000 and omitted["preview"]


async def test_a_refused_20_mb_write_leaves_the_session_usable(tmp_path: Path, isolated_state: Path) -> None:
    await _both_runs(tmp_path, ScriptedCall(name="write_file", arguments={"path": "big.txt", "content": "x" * HUGE}))


async def test_refused_deeply_nested_arguments_leave_no_200_kb_in_the_history(tmp_path: Path,
                                                                               isolated_state: Path) -> None:
    await _both_runs(tmp_path, ScriptedCall(name="write_file", arguments_raw=DEEP))


async def test_a_session_poisoned_before_is_repaired_on_load(tmp_path: Path, isolated_state: Path) -> None:
    """The store as the old code left it: the 20 MB call and its refusal in the rows."""
    root = tmp_path / "ws"
    root.mkdir()
    store = SqliteStore(workspace_dir(root) / "store.db")
    session_id = "ses_poisoned0000000000000000"
    try:
        store.create_session(session_id, str(root), "scripted/test", "poisoned")
        huge = json.dumps({"path": "big.txt", "content": "x" * HUGE})
        store.append_message(session_id, Message(role=Role.USER, parts=[TextPart(text="Write a big file.")]))
        store.append_message(session_id, Message(role=Role.ASSISTANT, parts=[
            ToolCallPart(call_id="call_big", name="write_file", arguments=huge)]))
        store.append_message(session_id, Message(role=Role.TOOL, parts=[ToolResultPart(
            call_id="call_big", name="write_file", ok=False, error_kind=ErrorKind.PARAMETER_MISMATCH,
            output=f"ERROR: parameter_mismatch: the content is {HUGE} bytes; the limit is 1000000.")]))
        store.append_message(session_id, Message(role=Role.ASSISTANT, parts=[TextPart(text="It is too big.")]))
    finally:
        store.close()
    script = write_script(tmp_path / "script.json", Script(label="after", replies=[
        # the old session's two assistant turns stand for the first two replies
        ScriptedReply(text="unused"), ScriptedReply(text="unused"),
        ScriptedReply(tool_calls=[ScriptedCall(name="write_file", arguments={"path": "small.txt",
                                                                             "content": "ok\n"})]),
        ScriptedReply(text="done")]))
    events, stderr = await asyncio.to_thread(_run, root, script, "Write a small one instead.", session_id)
    finish = _finish(events, stderr)
    assert finish["stopReason"] == "final", (finish, stderr[-3000:])
    assert (root / "small.txt").read_text() == "ok\n"
