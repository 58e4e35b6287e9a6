"""Real Neovim (headless) with the documented Lua module: agent/requestApproval is put to the user
through vim.ui.select (stubbed here, answering later like a UI plugin does); allow runs the command,
deny runs nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import write_script
from tests.e2e.nvim_harness import NVIMS, run_nvim
from tests.helpers import call, reply

BODY = r"""
  result.asked = {}
  local answers = { "allow_once", "deny" }
  -- The user: reads the question, then picks (asynchronously, 100 ms later).
  vim.ui.select = function(items, opts, on_choice)
    table.insert(result.asked, { items = items, prompt = opts.prompt, kind = opts.kind,
                                 labels = vim.tbl_map(opts.format_item, items) })
    local answer = table.remove(answers, 1)
    vim.defer_fn(function() on_choice(answer) end, 100)
  end
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT,
                                         approvalPolicy = "untrusted" } })
  vim.cmd("AgentRun make the file")
  wait("the first run", function() return agent.last_finish ~= nil end, 60000)
  result.first = agent.last_finish
  result.made = vim.loop.fs_stat(env.ROOT .. "/made.txt") ~= nil
  agent.last_finish = nil
  vim.cmd("AgentRun make the other file")
  wait("the second run", function() return agent.last_finish ~= nil end, 60000)
  result.second = agent.last_finish
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_neovim_asks_with_vim_ui_select_and_the_run_follows_the_answer(nvim: str, tmp_path: Path,
                                                                       isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = write_script(tmp_path / "script.json", [
        reply(call("run_command", command="python3 -c \"open('made.txt', 'w').write('x')\"")),
        reply(text="made it"),
        reply(call("run_command", command="python3 -c \"open('other.txt', 'w').write('x')\"")),
        reply(text="tried"),
    ])
    result = run_nvim(nvim, tmp_path, BODY, root=root, env={"SCRIPT": str(script)})
    first, second = result["asked"]
    assert first["items"] == ["allow_once", "allow_session", "deny"]
    # the session item says what it would allow without asking again (the server's sessionScope)
    assert first["labels"][0::2] == ["Allow once", "Deny"]
    assert first["labels"][1].startswith("Allow for this session: exactly `python3 -c ")
    assert "made.txt" in first["labels"][1] and first["labels"][1].endswith("` in run_command"), first["labels"]
    assert "run_command" in first["prompt"] and "made.txt" in first["prompt"] and "untrusted" in first["prompt"]
    assert first["kind"] == "lsp_agent_approval" and "other.txt" in second["prompt"]
    assert result["made"] is True and (root / "made.txt").exists()
    assert not (root / "other.txt").exists()
    assert (result["first"]["stopReason"], result["second"]["stopReason"]) == ("final", "final")
    assert result["second"]["toolErrors"] == 1 and result["first"]["toolErrors"] == 0
    events = "\n".join(result["events"])
    assert "?? approval asked: run_command" in events and "denied (deny, by user (editor))" in events
