"""`lsp-agent session list | checkpoints | rewind | fork` as real processes, after a real `lsp-agent run`
(so across a restart: the checkpoints were recorded by another process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import git_repo

REPLIES = [
    {"tool_calls": [{"name": "apply_patch", "arguments": {"path": "a.txt", "old_text": "one\n", "new_text": "two\n"}}]},
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "new\n"}}]},
    {"text": "done"},
]


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lsp_agent", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def cli_json(*args: str | Path, code: int = 0) -> dict[str, Any]:
    proc = cli(*args, "--json")
    assert proc.returncode == code, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


@pytest.fixture
def ran(tmp_path: Path) -> tuple[Path, str]:
    root = git_repo(tmp_path / "ws", {"a.txt": "one\n"})
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"label": "rewind", "replies": REPLIES}))
    proc = cli("run", "change a", "--workspace", root, "--model", "scripted/t", "--script", script, "--json")
    assert proc.returncode == 0, proc.stderr
    session_id = next(e["sessionID"] for e in map(json.loads, proc.stdout.splitlines()) if "sessionID" in e)
    assert (root / "a.txt").read_text() == "two\n" and (root / "new.txt").exists()
    return root, session_id


def test_list_checkpoints_rewind_and_undo(ran: tuple[Path, str]) -> None:
    root, session_id = ran
    listed = cli_json("session", "list", "--workspace", root)
    assert [s["sessionID"] for s in listed["sessions"]] == [session_id]
    checkpoints = cli_json("session", "checkpoints", session_id, "--workspace", root)["checkpoints"]
    assert {c["tool"] for c in checkpoints} == {"apply_patch", "write_file"}
    prompt = cli_json("session", "show", session_id, "--workspace", root)["messages"][0]["id"]

    preview = cli("session", "rewind", session_id, "--to", prompt, "--dry-run", "--workspace", root)
    assert preview.returncode == 0 and "-two\n+one\n" in preview.stdout and (root / "new.txt").exists()

    done = cli_json("session", "rewind", session_id, "--to", prompt, "--code", "--workspace", root)
    assert done["status"] == "done" and sorted(done["restored"]) == ["a.txt", "new.txt"]
    assert (root / "a.txt").read_text() == "one\n" and not (root / "new.txt").exists()
    # the session's standing checks no longer hold for the restored files
    notes = cli_json("session", "show", session_id, "--workspace", root)["messages"][-1]["parts"][0]["text"]
    assert "Changed outside the agent: a.txt, new.txt" in notes

    cli_json("session", "rewind", session_id, "--to", done["undo"], "--workspace", root)
    assert (root / "a.txt").read_text() == "two\n" and (root / "new.txt").read_text() == "new\n"


def test_an_outside_edit_is_kept_and_the_exit_code_says_so(ran: tuple[Path, str]) -> None:
    root, session_id = ran
    prompt = cli_json("session", "show", session_id, "--workspace", root)["messages"][0]["id"]
    (root / "a.txt").write_text("mine\n")
    kept = cli_json("session", "rewind", session_id, "--to", prompt, "--workspace", root, code=1)
    assert kept["status"] == "conflicts" and kept["kept"] == ["a.txt"] and (root / "a.txt").read_text() == "mine\n"
    assert not (root / "new.txt").exists()
    cli_json("session", "rewind", session_id, "--to", prompt, "--confirm", "--workspace", root)
    assert (root / "a.txt").read_text() == "one\n"


def test_fork_and_conversation_rewind(ran: tuple[Path, str]) -> None:
    root, session_id = ran
    history = cli_json("session", "show", session_id, "--workspace", root)["messages"]
    second = [m for m in history if m["role"] == "assistant"][1]["id"]
    fork = cli_json("session", "fork", session_id, "--at", second, "--workspace", root)["sessionID"]
    copied = cli_json("session", "show", fork, "--workspace", root)["messages"]
    assert len(copied) == [m["id"] for m in history].index(second)
    both = cli_json("session", "rewind", session_id, "--to", second, "--conversation", "--workspace", root)
    assert both["sessionID"] not in (None, session_id, fork) and (root / "new.txt").exists()  # files untouched
    listed = {s["sessionID"]: s["parentID"] for s in cli_json("session", "list", "--workspace", root)["sessions"]}
    assert listed[fork] == session_id and listed[both["sessionID"]] == session_id


def test_unknown_session_and_message_are_usage_errors(ran: tuple[Path, str]) -> None:
    root, session_id = ran
    for args in (("rewind", "ses_nope", "--to", "msg_x"), ("rewind", session_id, "--to", "msg_nope"),
                 ("checkpoints", "ses_nope"), ("fork", session_id, "--at", "msg_nope")):
        proc = cli("session", *args, "--workspace", root)
        assert proc.returncode == 2 and ("unknown_session" in proc.stderr or "unknown_message" in proc.stderr), args
    assert (root / "a.txt").read_text() == "two\n"


def test_a_session_running_in_another_process_is_not_rewound(ran: tuple[Path, str]) -> None:
    from lsp_agent.core.lease import SessionLeases
    from lsp_agent.settings.paths import workspace_dir
    from lsp_agent.store.db import Store

    root, session_id = ran
    prompt = cli_json("session", "show", session_id, "--workspace", root)["messages"][0]["id"]
    store = Store(workspace_dir(root) / "store.db")
    try:
        leases = SessionLeases(store)
        assert leases.take(session_id)  # this test process runs the session, as an editor would
        busy = cli("session", "rewind", session_id, "--to", prompt, "--workspace", root)
        assert busy.returncode == 3 and "busy" in busy.stderr
        assert (root / "a.txt").read_text() == "two\n"  # nothing restored
        leases.release(session_id)
    finally:
        store.close()
    cli_json("session", "rewind", session_id, "--to", prompt, "--workspace", root)
    assert (root / "a.txt").read_text() == "one\n"
