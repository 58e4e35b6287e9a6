"""Neovim as a new user meets it, each on every Neovim found (0.7 and 0.11+):
failed runs and a missing model are shown with vim.notify; the workspace comes from root markers and
nothing starts without one; the events window follows new lines and :AgentEvents reuses it; prompt
lines come before their generation's steps (also after :AgentSteerNow and from the code action); a run
without changes ends without a dangling `files changed:`."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_agent.providers.registry import NO_MODEL
from lsp_agent.providers.scripted import ScriptedError, ScriptedReply
from tests.e2e.conftest import write_script
from tests.e2e.nvim_harness import NVIMS, run_nvim
from tests.e2e.test_lsp_run import make_calc_workspace
from tests.e2e.test_nvim_steering import wait_for
from tests.helpers import call, reply

EVENTS_WINDOW = r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  local function events_wins()
    local n = 0
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_buf(win) == agent.events_buf then n = n + 1 end
    end
    return n
  end
  vim.cmd("AgentEvents")
  result.windows_first = #vim.api.nvim_list_wins()
  local win = vim.api.nvim_get_current_win()
  vim.cmd("wincmd p")
  vim.cmd("AgentRun break please")
  wait("the failed run", function() return agent.last_finish ~= nil end)
  result.finish = agent.last_finish
  local count = vim.api.nvim_buf_line_count(agent.events_buf)
  result.followed = vim.api.nvim_win_get_cursor(win)[1] == count and count > 1
  vim.cmd("AgentEvents")
  result.windows_again = #vim.api.nvim_list_wins()
  result.events_windows = events_wins()
  result.focused = vim.api.nvim_get_current_win() == win
  -- A cursor moved up stays where the reader put it.
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  agent.last_finish = nil
  vim.cmd("wincmd p")
  vim.cmd("AgentRun once more")
  wait("the second run", function() return agent.last_finish ~= nil end)
  result.stayed = vim.api.nvim_win_get_cursor(win)[1] == 1
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_a_failed_run_is_notified_and_the_events_window_follows_and_is_reused(
        nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = write_script(tmp_path / "script.json", [
        ScriptedReply(error=ScriptedError(message="the model server exploded", status=500)),
    ], repeat_last=True)
    result = run_nvim(nvim, tmp_path, EVENTS_WINDOW, root=root, env={"SCRIPT": str(script)})
    assert result["finish"]["stopReason"] == "error"
    errors = [n for n in result["notes"] if n["level"] == 4]  # vim.log.levels.ERROR
    assert len(errors) == 2 and "run failed: " in errors[0]["msg"] and "the model server exploded" in errors[0]["msg"]
    assert result["followed"] is True and result["stayed"] is True
    assert result["windows_first"] == result["windows_again"] == 2
    assert result["events_windows"] == 1 and result["focused"] is True
    stops = [line for line in result["events"] if line.startswith("-- stop: ")]
    assert stops == ["-- stop: error · verification: not_run · steps 1"] * 2  # no dangling "files changed:"


NO_MODEL_BODY = r"""
  local agent = start({ init_options = {} })
  vim.cmd("AgentRun hello")
  wait("the refusal", function()
    for _, note in ipairs(notes) do
      if note.msg:find("agent/run failed", 1, true) then return true end
    end
    return false
  end)
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_no_model_configured_is_said_plainly(nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    result = run_nvim(nvim, tmp_path, NO_MODEL_BODY, root=root)
    said = [n["msg"] for n in result["notes"]]
    assert f"lsp-agent: agent/run failed: {NO_MODEL}" in said
    # Newer Neovims also show the server's window/showMessage with vim.notify: the same sentence, and
    # no complaint about the (empty) initialization options.
    assert all(NO_MODEL in msg and "defaults used instead" not in msg for msg in said), said
    assert all("scripted" not in msg.replace("runs a scripted example", "") for msg in said)


ROOTS = r"""
  local agent = require("lsp_agent")
  result.client = agent.setup({ cmd = { env.PYTHON, "-m", "lsp_agent", "serve" },
                                init_options = { model = "scripted/test", script = env.SCRIPT } })
  result.root = agent.root
  if result.client then
    wait("initialize", function()
      local c = vim.lsp.get_client_by_id(agent.client_id)
      return c ~= nil and c.initialized
    end)
    local c = vim.lsp.get_client_by_id(agent.client_id)
    result.client_root = c.config.root_dir
    result.attached = vim.lsp.buf_is_attached(0, agent.client_id)
  end
  result.commands = vim.fn.exists(":AgentRun") == 2 -- plugin/lsp_agent.lua defined it at startup
  if not result.client then
    vim.cmd("AgentRun hello") -- looks for the workspace again, and still starts nothing
    result.client_after_command = agent.client_id
  end
  result.new_api = vim.fn.has("nvim-0.11") == 1
  if result.new_api then
    local registered = vim.lsp.config["lsp-agent"]
    result.registered = registered ~= nil and registered.cmd ~= nil and registered.cmd[1] == env.PYTHON
  end
"""


@pytest.mark.parametrize("nvim", NVIMS)
@pytest.mark.parametrize("start_in", ["/", "plain"])
def test_no_root_marker_no_server(nvim: str, start_in: str, tmp_path: Path, isolated_state: Path) -> None:
    cwd = Path("/") if start_in == "/" else tmp_path / "plain"
    cwd.mkdir(exist_ok=True)
    result = run_nvim(nvim, tmp_path, ROOTS, root=tmp_path, cwd=cwd, env={"SCRIPT": ""})
    assert result.get("client") is None and result.get("root") is None and result["commands"] is True
    assert result.get("client_after_command") is None
    first, again = result["notes"]  # from setup(), then from :AgentRun
    assert first["msg"].startswith("lsp-agent: no workspace: none of .git, .lsp-agent above ")
    assert "not started" in first["msg"] and again == first


@pytest.mark.parametrize("nvim", NVIMS)
@pytest.mark.parametrize("marker", [".lsp-agent", ".git"])
def test_the_workspace_is_the_nearest_directory_with_a_marker(nvim: str, marker: str, tmp_path: Path,
                                                               isolated_state: Path) -> None:
    root = tmp_path / "project"
    deeper = root / "src" / "pkg"
    deeper.mkdir(parents=True)
    (root / marker).mkdir()
    (deeper / "mod.py").write_text("x = 1\n", encoding="utf-8")
    script = write_script(tmp_path / "script.json", [reply(text="hi")])
    result = run_nvim(nvim, tmp_path, ROOTS, root=root, cwd=deeper, env={"SCRIPT": str(script)},
                      args=["mod.py"])
    assert result["client"] is not None and result["notes"] == []
    assert result["root"] == str(root) and result["client_root"] == str(root)
    assert result["attached"] is True and result["commands"] is True
    # On 0.11+ the server is registered with vim.lsp.config (and enabled with vim.lsp.enable).
    assert result.get("registered") is (True if result["new_api"] else None)


STEER_NOW_IDLE = r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  vim.cmd("AgentRun first")
  wait("the first generation", function() return agent.generation ~= nil end)
  local gen1 = agent.generation
  vim.cmd("AgentRun second")
  wait("the queued row", function() return #agent.queue == 1 end)
  vim.cmd("AgentCancel")
  wait("the first generation to end", function() return agent.last_finish ~= nil end)
  wait("the row to pause", function() return agent.queue[1].status == "paused" end)
  agent.last_finish = nil
  vim.cmd("AgentSteerNow")
  wait("the second generation to finish", function()
    return agent.last_finish ~= nil and agent.last_finish.generation ~= gen1
  end)
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_steer_now_on_an_idle_session_shows_the_prompt_before_its_steps(nvim: str, tmp_path: Path,
                                                                        isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = write_script(tmp_path / "script.json", [
        reply(call("run_command", command=wait_for("never"))),  # held until cancelled
        reply(text="second done"),
    ])
    result = run_nvim(nvim, tmp_path, STEER_NOW_IDLE, root=root, env={"SCRIPT": str(script)})
    events = result["events"]
    at = events.index("== second")
    assert events[at + 1].startswith("-- step 1/"), events
    assert events[-1].startswith("-- stop: final"), events


CODE_ACTION = r"""
  vim.cmd("edit " .. vim.fn.fnameescape(env.ROOT .. "/calc.py"))
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  vim.cmd("AgentRun check")
  wait("the check", function() return agent.last_finish ~= nil end)
  local gen1 = agent.last_finish.generation
  wait("the diagnostic", function() return #vim.diagnostic.get(0) == 1 end)
  vim.api.nvim_win_set_cursor(0, { vim.diagnostic.get(0)[1].lnum + 1, 0 })
  vim.ui.select = function(items, opts, on_choice)
    for i, item in ipairs(items) do
      local title = opts.format_item and opts.format_item(item) or tostring(item)
      if title:find("Ask the agent to fix this", 1, true) then
        return on_choice(item, i)
      end
    end
    on_choice(nil)
  end
  agent.last_finish = nil
  vim.lsp.buf.code_action()
  wait("the fix run", function() return agent.last_finish ~= nil and agent.last_finish.generation ~= gen1 end)
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_a_run_from_the_code_action_gets_a_prompt_line(nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make_calc_workspace(root)
    script = write_script(tmp_path / "script.json", [
        reply(call("verify_project")), reply(text="it fails"), reply(text="on it"),
    ])
    result = run_nvim(nvim, tmp_path, CODE_ACTION, root=root, env={"SCRIPT": str(script)})
    events = result["events"]
    (line,) = [e for e in events if e.startswith("== fix: ")]
    assert line.startswith("== fix: typecheck failure in calc.py at line 2: "), line
    assert events[events.index(line) + 1].startswith("-- step 1/"), events


QUEUED_FOLLOW_UP = r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  vim.cmd("AgentRun first")
  wait("the first generation", function() return agent.generation ~= nil end)
  local gen1 = agent.generation
  vim.cmd("AgentRun second")
  wait("the queued row", function() return #agent.queue == 1 and agent.queue[1].status == "queued" end)
  local f = assert(io.open(env.ROOT .. "/gate", "w"))
  f:close()
  wait("the follow-up to finish", function()
    return agent.last_finish ~= nil and agent.last_finish.generation ~= gen1
  end)
  vim.cmd("AgentRun third")
  wait("the third run", function() return #vim.tbl_filter(function(l) return l:find("^%-%- stop") end,
    vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)) == 3 end)
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_a_follow_up_that_waited_in_the_queue_gets_its_prompt_line(nvim: str, tmp_path: Path,
                                                                  isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = write_script(tmp_path / "script.json", [
        reply(call("run_command", command=wait_for("gate"))), reply(text="first done"),
        reply(text="second done"), reply(text="third done"),
    ])
    result = run_nvim(nvim, tmp_path, QUEUED_FOLLOW_UP, root=root, env={"SCRIPT": str(script)})
    events = result["events"]
    prompts = [line for line in events if line.startswith("== ")]
    assert prompts == ["== first", "== second", "== third"], events  # each once, none misplaced
    for prompt in prompts:
        assert events[events.index(prompt) + 1].startswith("-- step 1/"), events
    assert "-- queued: second" in events


STEER_INTO_A_FAILING_RUN = r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  vim.cmd("AgentRun first")
  wait("the first generation", function() return agent.generation ~= nil end)
  vim.cmd("AgentSteer use the other file")
  wait("the run to fail", function() return agent.last_finish ~= nil end)
  wait("the correction's end", function() return #notes > 1 end)
  result.finish = agent.last_finish
  result.receipts = vim.tbl_values(agent.receipts)
  result.generation = agent.generation
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_a_correction_accepted_by_a_run_that_then_fails_is_shown_not_lost(nvim: str, tmp_path: Path,
                                                                         isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    # The model answers with an error after 3 s: the correction is accepted meanwhile, then can never land.
    script = write_script(tmp_path / "script.json", [
        ScriptedReply(delay_ms=3000, error=ScriptedError(message="the model server exploded", status=500)),
    ])
    result = run_nvim(nvim, tmp_path, STEER_INTO_A_FAILING_RUN, root=root, env={"SCRIPT": str(script)})
    assert result["finish"]["stopReason"] == "error"
    (receipt,) = result["receipts"]
    assert (receipt["status"], receipt["reason"]) == ("rejected", "generation_ended_before_application")
    said = [n["msg"] for n in result["notes"]]
    assert "lsp-agent: correction not applied, the run ended (error): use the other file" in said, said
    assert result.get("generation") is None  # nothing started by itself after the failure
    assert "~~ correction accepted" in result["events"]
