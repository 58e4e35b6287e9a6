"""MCP through the headless CLI as a real process: servers from the workspace config, a failing
server reported once on stderr, and an eval arm's flags really exposing tool_search / read_recipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from lsp_agent.eval.manifest import Arm
from lsp_agent.eval.runner import config_pairs
from tests.helpers import trust_workspace
from tests.mcptools.conftest import FAULT_SERVER, PY


def _toml_str(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid TOML basic string


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".lsp-agent").mkdir(parents=True)
    (ws / ".lsp-agent" / "config.toml").write_text(
        "[mcp.servers.fault]\n"
        f"command = {_toml_str(PY)}\n"
        f"args = [{_toml_str(str(FAULT_SERVER))}]\n"
        "startupTimeoutMs = 60000\n"
        "[mcp.servers.ghost]\n"
        f"command = {_toml_str(str(tmp_path / 'no-such-server'))}\n", encoding="utf-8")
    (ws / "notes.txt").write_text("hello\n")
    trust_workspace(ws)  # the MCP servers of a workspace start only once the user trusts it
    return ws


def _run(ws: Path, tmp_path: Path, replies: list[dict[str, Any]], *extra: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"label": "cli-mcp", "replies": replies}))
    argv = [sys.executable, "-m", "lsp_agent", "run", "--workspace", str(ws), "--model", "scripted/t",
            "--script", str(script), "--json", "--approval", "never", *extra, "--", "use the tools"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, env=dict(os.environ))


def _uses(stdout: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return [e["part"] for e in events if e["type"] == "tool_use"]


def test_cli_run_calls_an_mcp_tool_and_reports_a_dead_server_once_on_stderr(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    proc = _run(ws, tmp_path, [{"tool_calls": [{"name": "mcp__fault__echo", "arguments": {"text": "via cli"}}]},
                               {"tool_calls": [{"name": "mcp__ghost__x", "arguments": {}}]},
                               {"text": "done"}])
    assert proc.returncode == 0, proc.stderr
    echo, ghost = _uses(proc.stdout)
    assert echo["state"]["status"] == "completed" and echo["state"]["output"].endswith("\nvia cli")
    assert ghost["state"]["errorKind"] == "unknown_tool"
    assert proc.stderr.count("MCP server 'ghost' is unavailable") == 1


def test_an_eval_arm_with_the_flags_on_really_exposes_tool_search_and_read_recipe(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    arm = Arm.model_validate({"name": "cand", "features": {"mcp_tool_discovery": True, "read_only_recipes": True}})
    pairs = [a for pair in config_pairs(arm, str(tmp_path)) for a in ("--config", pair)]
    recipe = {"steps": [{"id": "r", "tool": "read_file", "parameters": {"path": "notes.txt"}}],
              "select": [{"step": "r", "path": ["text"]}]}
    replies = [{"tool_calls": [{"name": "mcp__fault__echo", "arguments": {"text": "hidden"}}]},
               {"tool_calls": [{"name": "tool_search", "arguments": {"query": "echo the text back"}}]},
               {"tool_calls": [{"name": "mcp__fault__echo", "arguments": {"text": "found"}},
                               {"name": "read_recipe", "arguments": recipe}]},
               {"text": "done"}]
    proc = _run(ws, tmp_path, replies, *pairs)
    assert proc.returncode == 0, proc.stderr
    hidden, search, found, read = _uses(proc.stdout)
    assert hidden["state"]["errorKind"] == "unknown_tool"
    assert search["state"]["status"] == "completed" and "mcp__fault__echo" in search["state"]["output"]
    assert found["state"]["output"].endswith("\nfound")
    assert read["state"]["status"] == "completed" and "hello" in read["state"]["output"]
    # The baseline arm (flags pinned off) has neither tool.
    base = [a for pair in config_pairs(Arm.model_validate({"name": "base"}), str(tmp_path)) for a in ("--config", pair)]
    off = _run(ws, tmp_path, [{"tool_calls": [{"name": "tool_search", "arguments": {"query": "echo"}},
                                              {"name": "read_recipe", "arguments": recipe}]}, {"text": "x"}], *base)
    assert [u["state"]["errorKind"] for u in _uses(off.stdout)] == ["unknown_tool", "unknown_tool"]
