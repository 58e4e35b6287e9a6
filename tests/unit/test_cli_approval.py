"""`lsp-agent run --approval`: a real CLI process asks on a terminal (a pty) and denies without one."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lsp_agent.cli.approve import parse_answer
from lsp_agent.core.approval import Decision

TOUCH = "python3 -c \"open('made.txt', 'w').write('x')\""


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"label": "approval", "replies": [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": TOUCH}}]},
        {"text": "done"}]}))
    return ws, script


def _argv(ws: Path, script: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "lsp_agent", "run", "make it", "--workspace", str(ws), "--model", "scripted/t",
            "--script", str(script), "--json", *extra]


def _tool_use(stdout: str) -> dict[str, Any]:
    events = [json.loads(line) for line in stdout.splitlines() if line.strip().startswith("{")]
    (use,) = [e for e in events if e["type"] == "tool_use"]
    state: dict[str, Any] = use["part"]["state"]
    return state


def test_without_a_terminal_every_approval_is_denied(tmp_path: Path) -> None:
    ws, script = _setup(tmp_path)
    proc = subprocess.run(_argv(ws, script, "--approval", "untrusted"), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    state = _tool_use(proc.stdout)
    assert state["errorKind"] == "denied" and "cli (no terminal)" in state["output"]
    assert state["metadata"]["approvals"][0]["decision"] == "deny"
    assert "denied without asking (no terminal to ask on)" in proc.stderr
    assert not (ws / "made.txt").exists()


def _run_on_pty(argv: list[str], answer: bytes) -> tuple[str, str]:
    """Run with stdin and stderr on a pty; answer the question once it appears."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stderr=slave, stdout=subprocess.PIPE, text=True)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    answered = False
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([master], [], [], 0.2)
            if master in ready:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
            if not answered and b"(default: deny)" in seen:
                os.write(master, answer)
                answered = True
        stdout = proc.communicate(timeout=60)[0]
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return stdout, seen.decode("utf-8", "replace")


def test_on_a_terminal_the_user_is_asked_and_allow_runs_it(tmp_path: Path) -> None:
    ws, script = _setup(tmp_path)
    stdout, terminal = _run_on_pty(_argv(ws, script, "--approval", "untrusted"), b"o\n")
    assert "lsp-agent asks for approval: run_command" in terminal and "python3 -c" in terminal
    # what "session" would cover is said before the user answers
    assert "for this session means: exactly `python3 -c" in terminal and "` in run_command" in terminal
    state = _tool_use(stdout)
    assert state["output"].startswith("OK: exit=0"), state
    record = state["metadata"]["approvals"][0]
    assert (record["decision"], record["who"]) == ("allow_once", "user (terminal)")
    assert (ws / "made.txt").exists()


def test_on_a_terminal_deny_refuses(tmp_path: Path) -> None:
    ws, script = _setup(tmp_path)
    stdout, _ = _run_on_pty(_argv(ws, script, "--approval", "untrusted"), b"d\n")
    assert _tool_use(stdout)["errorKind"] == "denied" and not (ws / "made.txt").exists()


def test_the_default_policy_asks_nothing_for_a_sandboxed_command(tmp_path: Path) -> None:
    from lsp_agent.sandbox import probe
    if not probe().available:
        import pytest
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    ws, script = _setup(tmp_path)
    proc = subprocess.run(_argv(ws, script), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    state = _tool_use(proc.stdout)
    assert state["output"].startswith("OK: exit=0") and "approvals" not in (state.get("metadata") or {})


def test_answers_other_than_a_clear_yes_deny() -> None:
    assert [parse_answer(a) for a in ("o", " Yes\n", "s", "session", "", "maybe", "d")] == [
        Decision.ALLOW_ONCE, Decision.ALLOW_ONCE, Decision.ALLOW_SESSION, Decision.ALLOW_SESSION,
        Decision.DENY, Decision.DENY, Decision.DENY]
