"""Neovim's :AgentMcp against the real server: the MCP servers and their tools in lsp-agent://mcp."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.nvim_harness import NVIMS, run_nvim
from tests.mcptools.conftest import FAULT_SERVER

BODY = r"""
  local agent = start({ init_options = { model = "scripted/demo", approvalPolicy = "never", mcp = { servers = {
    fault = { command = env.PYTHON, args = { env.FAULT }, startupTimeoutMs = 60000 } } } } })
  vim.cmd("AgentMcp")
  result.shown = vim.wait(90000, function()
    return agent.mcp_buf ~= nil and #vim.api.nvim_buf_get_lines(agent.mcp_buf, 0, -1, false) > 1
  end, 50)
  result.lines = agent.mcp_buf and vim.api.nvim_buf_get_lines(agent.mcp_buf, 0, -1, false) or {}
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_agent_mcp_shows_servers_and_tools(nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    result = run_nvim(nvim, tmp_path, BODY, root=root, env={"FAULT": str(FAULT_SERVER)})
    lines = result["lines"]
    assert lines[0] == "fault  ready  stdio  6 tools"
    assert "  mcp__fault__echo  (exclusive)  Echo the text back, unchanged." in lines
    assert any(line.startswith("  [skipped] broken: ") for line in lines)
