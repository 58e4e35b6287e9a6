"""Real Neovim (headless) with the documented Lua module: :AgentSteer while running and while idle,
:AgentRun while busy queues, :AgentQueue lists with status, :AgentSteerNow steers the queue prefix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import write_script
from tests.e2e.test_lsp_steering import WINDOW_MS
from tests.helpers import call, reply

REPO = Path(__file__).resolve().parents[2]
LUA = REPO / "editors" / "nvim" / "lsp_agent.lua"

DRIVER = r"""
local env = vim.env
local result = {}
local ok, err = pcall(function()
  local agent = dofile(env.LSP_AGENT_LUA)
  agent.setup({ cmd = { env.PYTHON, "-m", "lsp_agent", "serve" }, root_dir = env.ROOT,
                init_options = { model = "scripted/test", script = env.SCRIPT } })
  local function wait(what, predicate)
    assert(vim.wait(30000, predicate, 20), "timed out waiting for " .. what)
  end
  local function finished(generation)
    return agent.last_finish ~= nil and agent.last_finish.generation == generation
  end
  local function applied()
    local n = 0
    for _, r in pairs(agent.receipts) do
      if r.status == "applied" then n = n + 1 end
    end
    return n
  end
  local function queue_buffer()
    return vim.api.nvim_buf_get_lines(agent.queue_buf, 0, -1, false)
  end
  wait("initialize", function()
    local c = vim.lsp.get_client_by_id(agent.client_id)
    return c ~= nil and c.initialized
  end)

  -- 1. Steer a running generation: the correction is applied (agent/receipt).
  vim.cmd("AgentRun first")
  wait("the first generation", function() return agent.generation ~= nil end)
  local gen1 = agent.generation
  vim.cmd("AgentSteer also check b")
  wait("the correction to apply", function() return applied() == 1 end)
  wait("the first generation to finish", function() return finished(gen1) end)

  -- 2. Steer while idle: the text is queued, and an idle session starts it at once.
  vim.cmd("AgentSteer idle follow-up")
  wait("the follow-up to start", function() return agent.generation ~= nil and agent.generation ~= gen1 end)
  local gen2 = agent.generation
  wait("the follow-up to finish", function() return finished(gen2) end)

  -- 3. Prompts typed while a generation runs are queued; :AgentQueue lists them.
  vim.cmd("AgentRun third")
  wait("the third generation", function() return agent.generation ~= nil and agent.generation ~= gen2 end)
  local gen3 = agent.generation
  vim.cmd("AgentRun fourth")
  vim.cmd("AgentRun fifth")
  wait("two queued rows", function() return #agent.queue == 2 end)
  vim.cmd("AgentQueue")
  wait("the queue buffer", function() return #queue_buffer() >= 4 end)
  result.queued = queue_buffer()

  -- 4. :AgentSteerNow steers both waiting rows into the running generation, in order.
  vim.cmd("AgentSteerNow")
  wait("both rows to apply", function() return applied() == 3 end)
  wait("the third generation to finish", function() return finished(gen3) end)
  result.finish = agent.last_finish
  wait("the queue buffer to show the steered rows", function()
    return table.concat(queue_buffer(), "\n"):find("steered, applied.*steered, applied") ~= nil
  end)
  result.history = queue_buffer()

  local c = vim.lsp.get_client_by_id(agent.client_id)
  local answer = c.request_sync("agent/session", { sessionID = agent.session_id }, 10000)
  result.messages = {}
  for _, m in ipairs(answer.result.messages) do
    if m.role == "user" then
      table.insert(result.messages, m.parts[1].text)
    end
  end
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
  result.generations = { gen1, gen2, gen3 }
end)
result.error = (not ok) and tostring(err) or nil
local f = assert(io.open(env.RESULT, "w"))
f:write(vim.json.encode(result))
f:close()
vim.cmd("qa!")
"""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim (`nvim`) is not installed; .ci/run installs it")
def test_neovim_steers_queues_lists_and_steers_the_queue_prefix(tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n", encoding="utf-8")
    # Replies are picked by the number of assistant messages so far in the session.
    script = write_script(tmp_path / "script.json", [
        reply(call("read_file", path="a.txt"), delay_ms=WINDOW_MS),  # generation 1, step 1: steered
        reply(text="checked a and b"),  # generation 1, step 2
        reply(text="idle follow-up done"),  # generation 2
        reply(text="working", delay_ms=WINDOW_MS),  # generation 3, step 1: queue, steer the prefix
        reply(text="done with four and five"),  # generation 3, step 2
    ])
    driver = tmp_path / "driver.lua"
    driver.write_text(DRIVER, encoding="utf-8")
    result_file = tmp_path / "result.json"
    env = {**os.environ, "LSP_AGENT_LUA": str(LUA), "ROOT": str(root), "SCRIPT": str(script),
           "PYTHON": sys.executable, "RESULT": str(result_file)}
    proc = subprocess.run(["nvim", "--headless", "--clean", "-n", "-i", "NONE", "-c", f"luafile {driver}"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result_file.exists(), f"nvim wrote no result (exit {proc.returncode}): {proc.stderr[-2000:]}"
    result = json.loads(result_file.read_text(encoding="utf-8"))
    assert result.get("error") is None, result["error"]

    assert result["messages"] == ["first", "also check b", "idle follow-up", "third", "fourth", "fifth"]
    assert (result["finish"]["stopReason"], result["finish"]["steps"]) == ("final", 2)
    assert len(set(result["generations"])) == 3

    # The queue buffer: waiting rows numbered in run order, then the history, newest first.
    queued = [line.split() for line in result["queued"][2:]]
    assert queued == [["1.", "queued", "fourth"], ["2.", "queued", "fifth"], ["--", "history"],
                      ["sent", "idle", "follow-up"]]
    history = result["history"][2:]
    assert [line.split()[:2] for line in history] == [["--", "history"], ["cancelled", "fifth"],
                                                      ["cancelled", "fourth"], ["sent", "idle"]]
    assert history[1].endswith("(steered, applied)") and history[2].endswith("(steered, applied)")

    events = result["events"]
    assert "-- queued: fourth" in events and "-- queued: fifth" in events
    assert "-- steered: fourth" in events and "-- steered: fifth" in events
    assert events.count("~~ correction applied") == 3
    assert "== idle follow-up" in events
