"""The headless CLI as a real process: demo scenarios and `run --json` events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def _cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lsp_agent", *args], capture_output=True, text=True, timeout=60,
                          cwd=cwd, env={**os.environ, **(env or {})})


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.mark.parametrize(("scenario", "stop", "verification"), [
    ("ok", "final", "verified"), ("wrong-write", "final", "failed"), ("budget", "step_limit", "not_run")])
def test_demo_scenario_ends_as_designed(scenario: str, stop: str, verification: str) -> None:
    proc = _cli("demo", "--scenario", scenario, "--json")
    assert proc.returncode == 0, proc.stderr
    events = _events(proc.stdout)
    finish = events[-1]
    assert finish["type"] == "run_finish"
    assert (finish["stopReason"], finish["verification"]) == (stop, verification)
    assert finish["scripted"] is True and "scripted" in finish["model"]
    assert "SCRIPTED" in proc.stderr  # labelled as a test double


def test_demo_transcript_is_readable_and_says_scripted() -> None:
    proc = _cli("demo")
    assert proc.returncode == 0, proc.stderr
    assert "SCRIPTED test double" in proc.stdout
    assert "verify_project" in proc.stdout and "stop: final · verification: verified" in proc.stdout


def _script(path: Path, replies: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"label": "cli-test", "replies": replies}))
    return path


def test_run_json_streams_opencode_style_events_and_ends_with_run_finish(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello\n")
    script = _script(tmp_path / "s.json", [
        {"text": "reading", "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}},
                                           {"name": "read_file", "arguments": {"path": "missing.txt"}}],
         "usage": {"input": 100, "output": 10, "reasoning": 3, "cache_read": 40}},
        {"text": "done", "usage": {"input": 120, "output": 5}},
    ])
    proc = _cli("run", "summarise notes", "--workspace", str(ws), "--model", "scripted/t", "--script", str(script),
                "--json")
    assert proc.returncode == 0, proc.stderr
    events = _events(proc.stdout)
    assert [e["type"] for e in events] == ["step_start", "text", "tool_use", "tool_use", "step_finish",
                                           "step_start", "text", "step_finish", "run_finish"]
    uses = [e for e in events if e["type"] == "tool_use"]
    assert [u["part"]["state"]["status"] for u in uses] == ["completed", "error"]
    assert len({u["part"]["id"] for u in uses}) == 2
    first_finish = events[4]["part"]["tokens"]
    assert first_finish == {"input": 100, "output": 10, "reasoning": 3, "cache": {"read": 40, "write": 0},
                            "unknown": False}
    finish = events[-1]
    assert finish["stopReason"] == "final" and finish["verification"] == "not_run"
    assert (finish["steps"], finish["toolCalls"], finish["toolErrors"]) == (2, 2, 1)
    assert finish["tokens"]["input"] == 220 and finish["sessionID"].startswith("ses_")
    assert not list(ws.glob(".lsp-agent*")) and sorted(p.name for p in ws.iterdir()) == ["notes.txt"]


def test_run_exit_codes(tmp_path: Path) -> None:
    script = _script(tmp_path / "s.json", [{"tool_calls": [{"name": "list_dir", "arguments": {}}]}] * 3)
    limited = _cli("run", "x", "--workspace", str(tmp_path), "--model", "scripted/t", "--script", str(script),
                   "--max-steps", "2", "--json")
    assert limited.returncode == 1 and _events(limited.stdout)[-1]["stopReason"] == "step_limit"
    assert _cli("run", "x", "--workspace", str(tmp_path / "nope"), "--model", "scripted/t").returncode == 2
    assert _cli("run", "x", "--workspace", str(tmp_path), "--max-steps", "0").returncode == 2
    no_script = _cli("run", "x", "--workspace", str(tmp_path), "--model", "scripted/t")
    assert no_script.returncode == 2 and "script" in no_script.stderr


def test_run_continues_a_session(tmp_path: Path) -> None:
    script = _script(tmp_path / "s.json", [{"text": "first"}, {"text": "second"}])
    args = ["--workspace", str(tmp_path), "--model", "scripted/t", "--script", str(script), "--json"]
    first = _events(_cli("run", "one", *args).stdout)[-1]
    second = _cli("run", "two", *args, "--session", first["sessionID"])
    events = _events(second.stdout)
    assert events[-1]["sessionID"] == first["sessionID"]
    assert [e["part"]["text"] for e in events if e["type"] == "text"] == ["second"]
