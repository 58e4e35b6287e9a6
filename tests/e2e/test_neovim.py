"""Real Neovim (headless) with the documented Lua setup: a scripted task against an open buffer."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import write_script
from tests.e2e.nvim_harness import NVIMS, run_nvim
from tests.e2e.test_lsp_run import make_calc_workspace
from tests.helpers import call, reply

BODY = r"""
  vim.cmd("edit " .. vim.fn.fnameescape(env.TARGET))
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  -- An unsaved change: the agent must read it from the buffer.
  vim.api.nvim_buf_set_lines(0, 1, 1, false, { "    # unsaved note" })
  vim.cmd("AgentRun make add() add")
  result.finished = vim.wait(60000, function() return agent.last_finish ~= nil end, 50)
  result.finish = agent.last_finish
  result.buffer = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") .. "\n"
  result.modified = vim.bo.modified
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_neovim_runs_a_task_on_an_open_buffer_and_saves_it(nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make_calc_workspace(root)
    script = write_script(tmp_path / "script.json", [
        reply(call("read_file", path="calc.py")),
        reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n")),
        reply(call("verify_project")),
        reply(text="Fixed."),
    ])
    result = run_nvim(nvim, tmp_path, BODY, root=root,
                      env={"TARGET": str(root / "calc.py"), "SCRIPT": str(script)})
    assert result["finished"], result
    assert (result["finish"]["stopReason"], result["finish"]["verification"]) == ("final", "verified")
    expected = "def add(a, b):\n    # unsaved note\n    return a + b\n"
    assert result["buffer"] == expected
    assert (root / "calc.py").read_text(encoding="utf-8") == expected
    assert result["modified"] is False
    events = result["events"]
    assert events[0] == "== make add() add" and events[1].startswith("-- step 1/")
    assert any(line.startswith("-- stop: final · verification: verified · steps 4 · files changed: calc.py")
               for line in events)
    # The edit arrived as workspace/applyEdit without the built-in "Workspace edit lsp-agent" echo.
    assert not [p for p in result["printed"] if "Workspace edit" in p]
    # A run that ends well is not announced with vim.notify; its progress is echoed.
    assert result["notes"] == []
    assert any(e.startswith("lsp-agent: step ") for e in result["echoes"]), result["echoes"]
    assert not [e for e in result["echoes"] if "deprecated" in e], result["echoes"]  # 0.11+: client:request
