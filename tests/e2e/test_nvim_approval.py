"""Real Neovim (headless) with the documented Lua module: agent/requestApproval is put to the user
through vim.ui.select (stubbed here, answering later like a UI plugin does); allow runs the command,
deny runs nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import write_script
from tests.helpers import call, reply

REPO = Path(__file__).resolve().parents[2]
LUA = REPO / "editors" / "nvim" / "lsp_agent.lua"

DRIVER = r"""
local env = vim.env
local result = { asked = {} }
local answers = { "allow_once", "deny" }
-- The user: reads the question, then picks (asynchronously, 100 ms later).
vim.ui.select = function(items, opts, on_choice)
  table.insert(result.asked, { items = items, prompt = opts.prompt, kind = opts.kind,
                               labels = vim.tbl_map(opts.format_item, items) })
  local answer = table.remove(answers, 1)
  vim.defer_fn(function() on_choice(answer) end, 100)
end
local ok, err = pcall(function()
  local agent = dofile(env.LSP_AGENT_LUA)
  agent.setup({ cmd = { env.PYTHON, "-m", "lsp_agent", "serve" }, root_dir = env.ROOT,
                init_options = { model = "scripted/test", script = env.SCRIPT, approvalPolicy = "untrusted" } })
  local function wait(what, predicate)
    assert(vim.wait(60000, predicate, 20), "timed out waiting for " .. what)
  end
  wait("initialize", function()
    local c = vim.lsp.get_client_by_id(agent.client_id)
    return c ~= nil and c.initialized
  end)
  vim.cmd("AgentRun make the file")
  wait("the first run", function() return agent.last_finish ~= nil end)
  result.first = agent.last_finish
  result.made = vim.loop.fs_stat(env.ROOT .. "/made.txt") ~= nil
  agent.last_finish = nil
  vim.cmd("AgentRun make the other file")
  wait("the second run", function() return agent.last_finish ~= nil end)
  result.second = agent.last_finish
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
end)
result.error = (not ok) and tostring(err) or nil
local f = assert(io.open(env.RESULT, "w"))
f:write(vim.json.encode(result))
f:close()
vim.cmd("qa!")
"""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim (`nvim`) is not installed; .ci/run installs it")
def test_neovim_asks_with_vim_ui_select_and_the_run_follows_the_answer(tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = write_script(tmp_path / "script.json", [
        reply(call("run_command", command="python3 -c \"open('made.txt', 'w').write('x')\"")),
        reply(text="made it"),
        reply(call("run_command", command="python3 -c \"open('other.txt', 'w').write('x')\"")),
        reply(text="tried"),
    ])
    driver = tmp_path / "driver.lua"
    driver.write_text(DRIVER, encoding="utf-8")
    result_file = tmp_path / "result.json"
    env = {**os.environ, "LSP_AGENT_LUA": str(LUA), "ROOT": str(root), "SCRIPT": str(script),
           "PYTHON": sys.executable, "RESULT": str(result_file)}
    proc = subprocess.run(["nvim", "--headless", "--clean", "-n", "-i", "NONE", "-c", f"luafile {driver}"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=150, stdin=subprocess.DEVNULL)
    assert result_file.exists(), f"nvim wrote no result (exit {proc.returncode}): {proc.stderr[-2000:]}"
    result = json.loads(result_file.read_text(encoding="utf-8"))
    assert result.get("error") is None, result["error"]
    first, second = result["asked"]
    assert first["items"] == ["allow_once", "allow_session", "deny"]
    assert first["labels"] == ["Allow once", "Allow for this session", "Deny"]
    assert "run_command" in first["prompt"] and "made.txt" in first["prompt"] and "untrusted" in first["prompt"]
    assert first["kind"] == "lsp_agent_approval" and "other.txt" in second["prompt"]
    assert result["made"] is True and (root / "made.txt").exists()
    assert not (root / "other.txt").exists()
    assert (result["first"]["stopReason"], result["second"]["stopReason"]) == ("final", "final")
    assert result["second"]["toolErrors"] == 1 and result["first"]["toolErrors"] == 0
    events = "\n".join(result["events"])
    assert "?? approval asked: run_command" in events and "denied (deny, by user (editor))" in events
