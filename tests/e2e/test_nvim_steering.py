"""Real Neovim (headless) with the documented Lua module: :AgentSteer while running and while idle,
:AgentRun while busy queues, :AgentQueue lists with status, :AgentSteerNow steers the queue prefix.

Deterministic: the two steps that must still be running when Neovim steers or queues are a command
that waits for a gate file, which the driver creates only once the correction (step 1) or both
queued rows (step 3) have been taken by the server (a timed model delay raced a loaded machine), and
the wait for "two queued rows" counts rows whose status is `queued`: agent.queue also holds the
history, so a bare `#agent.queue == 2` was true with one row waiting and one sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import write_script
from tests.e2e.nvim_harness import NVIMS, run_nvim
from tests.helpers import call, reply

BODY = r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  local function finished(generation)
    return agent.last_finish ~= nil and agent.last_finish.generation == generation
  end
  -- A generation other than `...` the client has seen: running now, or already over (a scripted
  -- follow-up can start and finish between two looks, leaving agent.generation nil again).
  local function newer(...)
    local known = {}
    for _, generation in ipairs({ ... }) do known[generation] = true end
    if agent.generation ~= nil and not known[agent.generation] then return agent.generation end
    for generation in pairs(agent.stopped) do
      if not known[generation] then return generation end
    end
    return nil
  end
  local function receipts(status)
    local n = 0
    for _, r in pairs(agent.receipts) do
      if status == nil or r.status == status then n = n + 1 end
    end
    return n
  end
  local function queue_buffer()
    return vim.api.nvim_buf_get_lines(agent.queue_buf, 0, -1, false)
  end
  local function events()
    return vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
  end
  local function open_gate(name)
    local f = assert(io.open(env.ROOT .. "/" .. name, "w"))
    f:close()
  end

  -- 1. Steer a running generation (held by its command until the server took the correction).
  vim.cmd("AgentRun first")
  wait("the first generation", function() return agent.generation ~= nil end)
  local gen1 = agent.generation
  vim.cmd("AgentSteer also check b")
  wait("the correction's receipt", function() return receipts() == 1 end)
  open_gate("gate1")
  wait("the correction to apply", function() return receipts("applied") == 1 end)
  wait("the first generation to finish", function() return finished(gen1) end)

  -- 2. Steer while idle: the text is queued, and an idle session starts it at once.
  vim.cmd("AgentSteer idle follow-up")
  wait("the follow-up to start", function() return newer(gen1) ~= nil end)
  local gen2 = newer(gen1)
  wait("the follow-up to finish", function() return finished(gen2) end)

  -- 3. Prompts typed while a generation runs are queued; :AgentQueue lists them.
  vim.cmd("AgentRun third")
  wait("the third generation", function() return newer(gen1, gen2) ~= nil end)
  local gen3 = newer(gen1, gen2)
  vim.cmd("AgentRun fourth")
  vim.cmd("AgentRun fifth")
  local function waiting()
    local n = 0
    for _, item in ipairs(agent.queue) do
      if item.status == "queued" then n = n + 1 end
    end
    return n
  end
  -- agent.queue also holds the history (the sent idle follow-up): count the waiting rows only.
  wait("two queued rows", function() return waiting() == 2 end)
  vim.cmd("AgentQueue")
  wait("the queue buffer", function() return #queue_buffer() >= 4 end)
  result.queued = queue_buffer()

  -- 4. :AgentSteerNow steers both waiting rows into the running generation, in order.
  vim.cmd("AgentSteerNow")
  wait("both rows steered", function()
    local shown = table.concat(events(), "\n")
    return shown:find("-- steered: fourth", 1, true) ~= nil and shown:find("-- steered: fifth", 1, true) ~= nil
  end)
  open_gate("gate3")
  wait("both rows to apply", function() return receipts("applied") == 3 end)
  wait("the third generation to finish", function() return finished(gen3) end)
  result.finish = agent.last_finish
  wait("the queue buffer to show the steered rows", function()
    return table.concat(queue_buffer(), "\n"):find("steered, applied.*steered, applied") ~= nil
  end)
  result.history = queue_buffer()

  local c = vim.lsp.get_client_by_id(agent.client_id)
  local params = { sessionID = agent.session_id }
  local answer
  if vim.fn.has("nvim-0.11") == 1 then
    answer = c:request_sync("agent/session", params, 10000)
  else
    answer = c.request_sync("agent/session", params, 10000)
  end
  result.messages = {}
  for _, m in ipairs(answer.result.messages) do
    if m.role == "user" then
      table.insert(result.messages, m.parts[1].text)
    end
  end
  result.events = events()
  result.generations = { gen1, gen2, gen3 }
"""


def wait_for(gate: str) -> str:
    """A command that runs until the file `gate` exists in the workspace."""
    return f"python3 -c \"import os, time; [time.sleep(0.02) for _ in iter(lambda: os.path.exists('{gate}'), True)]\""


@pytest.mark.parametrize("nvim", NVIMS)
def test_neovim_steers_queues_lists_and_steers_the_queue_prefix(nvim: str, tmp_path: Path,
                                                                isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    # Replies are picked by the number of assistant messages so far in the session.
    script = write_script(tmp_path / "script.json", [
        reply(call("run_command", command=wait_for("gate1"))),  # generation 1, step 1: steered
        reply(text="checked a and b"),  # generation 1, step 2
        reply(text="idle follow-up done"),  # generation 2
        reply(call("run_command", command=wait_for("gate3"))),  # generation 3, step 1: queue, steer the prefix
        reply(text="done with four and five"),  # generation 3, step 2
    ])
    result = run_nvim(nvim, tmp_path, BODY, root=root, env={"SCRIPT": str(script)})

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
    # Each prompt line comes right before its generation's first step.
    for prompt in ("== first", "== idle follow-up", "== third"):
        assert events[events.index(prompt) + 1].startswith("-- step 1/"), events
