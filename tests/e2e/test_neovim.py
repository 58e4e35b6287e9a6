"""Real Neovim (headless) with the documented Lua setup: a scripted task against an open buffer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import write_script
from tests.e2e.test_lsp_run import make_calc_workspace
from tests.helpers import call, reply

REPO = Path(__file__).resolve().parents[2]
LUA = REPO / "editors" / "nvim" / "lsp_agent.lua"

DRIVER = r"""
local env = vim.env
local result = {}
local ok, err = pcall(function()
  local agent = dofile(env.LSP_AGENT_LUA)
  vim.cmd("edit " .. vim.fn.fnameescape(env.TARGET))
  agent.setup({ cmd = { env.PYTHON, "-m", "lsp_agent", "serve" }, root_dir = env.ROOT,
                init_options = { model = "scripted/test", script = env.SCRIPT } })
  assert(vim.wait(20000, function()
    local c = vim.lsp.get_client_by_id(agent.client_id)
    return c ~= nil and c.initialized
  end, 20), "the server did not initialize")
  -- An unsaved change: the agent must read it from the buffer.
  vim.api.nvim_buf_set_lines(0, 1, 1, false, { "    # unsaved note" })
  vim.cmd("AgentRun make add() add")
  result.finished = vim.wait(60000, function() return agent.last_finish ~= nil end, 50)
  result.finish = agent.last_finish
  result.buffer = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") .. "\n"
  result.modified = vim.bo.modified
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
end)
result.error = (not ok) and tostring(err) or nil
local f = assert(io.open(env.RESULT, "w"))
f:write(vim.json.encode(result))
f:close()
vim.cmd("qa!")
"""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim (`nvim`) is not installed; .ci/run installs it")
def test_neovim_runs_a_task_on_an_open_buffer_and_saves_it(tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make_calc_workspace(root)
    script = write_script(tmp_path / "script.json", [
        reply(call("read_file", path="calc.py")),
        reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n")),
        reply(call("verify_project")),
        reply(text="Fixed."),
    ])
    driver = tmp_path / "driver.lua"
    driver.write_text(DRIVER, encoding="utf-8")
    result_file = tmp_path / "result.json"
    env = {**os.environ, "LSP_AGENT_LUA": str(LUA), "TARGET": str(root / "calc.py"), "ROOT": str(root),
           "SCRIPT": str(script), "PYTHON": sys.executable, "RESULT": str(result_file)}
    proc = subprocess.run(["nvim", "--headless", "--clean", "-n", "-i", "NONE", "-c", f"luafile {driver}"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result_file.exists(), f"nvim wrote no result (exit {proc.returncode}): {proc.stderr[-2000:]}"
    result = json.loads(result_file.read_text(encoding="utf-8"))
    assert result.get("error") is None, result["error"]
    assert result["finished"], result
    assert (result["finish"]["stopReason"], result["finish"]["verification"]) == ("final", "verified")
    expected = "def add(a, b):\n    # unsaved note\n    return a + b\n"
    assert result["buffer"] == expected
    assert (root / "calc.py").read_text(encoding="utf-8") == expected
    assert result["modified"] is False
    assert any(line.startswith("-- stop: final · verification: verified") for line in result["events"])
