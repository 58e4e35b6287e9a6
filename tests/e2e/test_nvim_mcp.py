"""Neovim's :AgentMcp against the real server: the MCP servers and their tools in lsp-agent://mcp."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcptools.conftest import FAULT_SERVER

REPO = Path(__file__).resolve().parents[2]
LUA = REPO / "editors" / "nvim" / "lsp_agent.lua"

DRIVER = r"""
local env = vim.env
local result = {}
local ok, err = pcall(function()
  local agent = dofile(env.LSP_AGENT_LUA)
  agent.setup({ cmd = { env.PYTHON, "-m", "lsp_agent", "serve" }, root_dir = env.ROOT,
                init_options = { model = "scripted/demo", approvalPolicy = "never", mcp = { servers = {
                  fault = { command = env.PYTHON, args = { env.FAULT }, startupTimeoutMs = 60000 } } } } })
  assert(vim.wait(20000, function()
    local c = vim.lsp.get_client_by_id(agent.client_id)
    return c ~= nil and c.initialized
  end, 20), "the server did not initialize")
  vim.cmd("AgentMcp")
  result.shown = vim.wait(90000, function()
    return agent.mcp_buf ~= nil and #vim.api.nvim_buf_get_lines(agent.mcp_buf, 0, -1, false) > 1
  end, 50)
  result.lines = agent.mcp_buf and vim.api.nvim_buf_get_lines(agent.mcp_buf, 0, -1, false) or {}
end)
result.error = (not ok) and tostring(err) or nil
local f = assert(io.open(env.RESULT, "w"))
f:write(vim.json.encode(result))
f:close()
vim.cmd("qa!")
"""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim (`nvim`) is not installed; .ci/run installs it")
def test_agent_mcp_shows_servers_and_tools(tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    driver = tmp_path / "driver.lua"
    driver.write_text(DRIVER, encoding="utf-8")
    result_file = tmp_path / "result.json"
    env = {**os.environ, "LSP_AGENT_LUA": str(LUA), "ROOT": str(root), "PYTHON": sys.executable,
           "FAULT": str(FAULT_SERVER), "RESULT": str(result_file)}
    proc = subprocess.run(["nvim", "--headless", "--clean", "-n", "-i", "NONE", "-c", f"luafile {driver}"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=150, stdin=subprocess.DEVNULL)
    assert result_file.exists(), f"nvim wrote no result (exit {proc.returncode}): {proc.stderr[-2000:]}"
    result = json.loads(result_file.read_text(encoding="utf-8"))
    assert result.get("error") is None, result["error"]
    lines = result["lines"]
    assert lines[0] == "fault  ready  stdio  6 tools"
    assert "  mcp__fault__echo  (exclusive)  Echo the text back, unchanged." in lines
    assert any(line.startswith("  [skipped] broken: ") for line in lines)
