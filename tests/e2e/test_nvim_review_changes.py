"""Reviewing a run's changes in a real headless Neovim (0.7.2 and 0.12) with the real server and the
scripted model: `:AgentReview` fills the quickfix list, <CR> opens the diff against the pre-run
text, the review keymaps (typed as keys) revert a hunk as one undo step that the server learns of
(agent/status goes from verified to not_run) and accept hunks; `User LspAgentRunStart/Stop` fire
(with data on 0.8+, in vim.g.lsp_agent_run everywhere) and statusline() follows; a prompt given
through the Lua API while the server is still starting runs once it is ready; a file the server
wrote on disk is reviewed against the run's first checkpoint (a dry-run agent/rewind diff)."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from tests.e2e.conftest import PY, write_script
from tests.e2e.nvim_harness import NVIMS, nvim_is_recent, run_nvim
from tests.e2e.test_nvim_steering import wait_for
from tests.helpers import call, reply, verify_config

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n"
PASS = 'print("Success: no issues found in 1 source file")\n'


def _workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "calc.py").write_text(CALC, encoding="utf-8")
    (root / "check.py").write_text(PASS, encoding="utf-8")
    verify_config(root, [PY, "check.py"], kind="typecheck", parser="mypy")
    script = write_script(tmp_path / "script.json", [
        reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n")),
        reply(call("apply_patch", path="calc.py", old_text="def mul(a, b):\n    return a + b\n",
                   new_text="def mul(a, b):\n    return a * b\n")),
        reply(call("verify_project")),
        reply(text="fixed both"),
    ])
    return root, {"SCRIPT": str(script), "XDG_DATA_HOME": str(tmp_path / "data")}


REVIEW = r"""
  local seen = {}
  result.autocmds = seen
  vim.api.nvim_create_autocmd("User", { pattern = { "LspAgentRunStart", "LspAgentRunStop" },
    callback = function(args)
      table.insert(seen, { name = args.match, data = args.data, g = vim.deepcopy(vim.g.lsp_agent_run),
                           statusline = require("lsp_agent").statusline() })
    end })
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  local real = vim.api.nvim_get_current_buf()
  local function keys(k)
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(k, true, false, true), "mtx", false)
  end
  local function lines() return vim.api.nvim_buf_get_lines(real, 0, -1, false) end
  local function status()
    local answer = nil
    local c = vim.lsp.get_client_by_id(agent.client_id)
    local params = { sessionID = agent.session_id }
    local handler = function(err, r) answer = err and ("error: " .. err.message) or r.verification end
    if vim.fn.has("nvim-0.11") == 1 then c:request("agent/status", params, handler)
    else c.request("agent/status", params, handler) end
    wait("agent/status", function() return answer ~= nil end)
    return answer
  end

  vim.cmd("AgentRun fix add and mul")
  wait("the run", function() return agent.last_finish ~= nil end)
  result.finish_verification = agent.last_finish.verification
  result.statusline_done = agent.statusline()
  result.status_before = status()
  result.agent_text = lines()

  vim.cmd("AgentReview")
  local qf = vim.fn.getqflist({ title = 0, items = 0 })
  result.qf_title = qf.title
  result.qf = {}
  for _, item in ipairs(qf.items) do
    table.insert(result.qf, { file = vim.fn.fnamemodify(vim.fn.bufname(item.bufnr), ":t"), lnum = item.lnum,
                              text = item.text })
  end
  result.in_quickfix = vim.bo.buftype == "quickfix"
  keys("<CR>")                                      -- open the entry: the diff against the pre-run text
  result.after_open_buf = vim.api.nvim_get_current_buf() == real
  result.diff_real = vim.wo.diff
  local scratch = nil
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    local buf = vim.api.nvim_win_get_buf(win)
    if buf ~= real and vim.api.nvim_win_get_option(win, "diff") then scratch = buf end
  end
  result.pre_run = scratch and vim.api.nvim_buf_get_lines(scratch, 0, -1, false)
  result.cursor = vim.api.nvim_win_get_cursor(0)[1]

  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  keys("\\r")                                       -- revert the first hunk
  result.reverted = lines()
  result.disk_reverted = vim.fn.readfile(env.ROOT .. "/calc.py")
  local downgraded = nil
  wait("agent/status not verified after the revert", function()
    downgraded = status()
    return downgraded ~= "verified"
  end)
  result.status_after = downgraded
  wait("the statusline to follow", function() return agent.statusline() ~= "agent: verified" end)
  result.statusline_after = agent.statusline()
  result.qf_after_revert = vim.fn.getqflist({ id = 0, items = 0 }).items[1].text

  keys("u")                                         -- one undo step brings the agent's hunk back
  result.undone = lines()

  vim.api.nvim_win_set_cursor(0, { 6, 0 })
  keys("\\a")                                       -- accept the second hunk: the file is untouched
  result.after_accept_one = lines()
  result.qf_after_one = vim.fn.getqflist({ items = 0 }).items[1].text
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  keys("\\a")
  result.qf_after_both = vim.fn.getqflist({ items = 0 }).items[1].text
  result.after_accept_both = lines()
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_review_lists_the_run_s_file_shows_its_diff_and_reverts_a_hunk_the_server_learns_of(
        nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root, env = _workspace(tmp_path)
    result = run_nvim(nvim, tmp_path, REVIEW, root=root, env=env, args=[str(root / "calc.py")])
    agent_text = ["def add(a, b):", "    return a + b", "", "", "def mul(a, b):", "    return a * b"]
    pre_run = CALC.splitlines()
    assert result["finish_verification"] == "verified" and result["status_before"] == "verified"
    assert result["statusline_done"] == "agent: verified"
    assert result["agent_text"] == agent_text

    assert result["qf_title"] == "lsp-agent review"
    assert result["qf"] == [{"file": "calc.py", "lnum": 2, "text": "+2 -2"}], result["qf"]
    assert result["in_quickfix"] is True
    assert result["after_open_buf"] is True and result["diff_real"] is True
    assert result["pre_run"] == pre_run and result["cursor"] == 2

    # the revert: the first hunk is the pre-run text again, the second stays; written, so the server knows
    assert result["reverted"] == [pre_run[0], pre_run[1], *agent_text[2:]]
    assert result["disk_reverted"] == result["reverted"]
    assert result["status_after"] == "not_run", result["status_after"]
    assert result["statusline_after"] == "agent: not verified"
    assert result["qf_after_revert"] == "+1 -1"
    assert result["undone"] == agent_text

    # accepting marks reviewed and never changes the file
    assert result["after_accept_one"] == agent_text and result["after_accept_both"] == agent_text
    assert result["qf_after_one"] == "+2 -2"
    assert result["qf_after_both"] == "+2 -2 · accepted"

    # RunStart then RunStop, with data where Neovim has it (0.8+), in vim.g.lsp_agent_run everywhere
    names = [a["name"] for a in result["autocmds"]]
    assert names == ["LspAgentRunStart", "LspAgentRunStop"], names
    start, stop = result["autocmds"]
    assert start["g"]["running"] is True and start["statusline"] == "agent: running"
    assert stop["g"]["running"] is False and stop["g"]["stopReason"] == "final"
    assert stop["g"]["verification"] == "verified" and stop["statusline"] == "agent: verified"
    if nvim_is_recent(nvim):
        assert stop["data"] == stop["g"] and start["data"]["generation"] == stop["data"]["generation"]
    else:
        assert "data" not in start and "data" not in stop


REVERT_FILE = r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT },
                        review = { keymaps = { revert_file = "<F5>", accept_hunk = false } } })
  local real = vim.api.nvim_get_current_buf()
  vim.cmd("AgentRun fix add and mul")
  wait("the run", function() return agent.last_finish ~= nil end)
  vim.cmd("AgentReview calc.py")                   -- with a file: its diff at once
  result.maps = {}
  for _, m in ipairs(vim.api.nvim_buf_get_keymap(real, "n")) do
    if m.desc and m.desc:find("lsp-agent review", 1, true) then table.insert(result.maps, m.lhs) end
  end
  table.sort(result.maps)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<F5>", true, false, true), "mtx", false)
  result.reverted = vim.api.nvim_buf_get_lines(real, 0, -1, false)
  result.windows = #vim.api.nvim_list_wins()
  result.qf = vim.fn.getqflist({ items = 0 }).items[1].text
  vim.api.nvim_feedkeys("u", "mtx", false)
  result.undone = vim.api.nvim_buf_get_lines(real, 0, -1, false)
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_revert_file_is_one_undo_step_and_keymaps_are_configurable(
        nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root, env = _workspace(tmp_path)
    result = run_nvim(nvim, tmp_path, REVERT_FILE, root=root, env=env, args=[str(root / "calc.py")])
    assert result["maps"] == ["<F5>", "\\A", "\\r"], result["maps"]
    assert result["reverted"] == CALC.splitlines()
    assert result["windows"] == 1  # the diff closed with the revert
    assert result["qf"] == "+0 -0 · reverted"
    assert result["undone"][1] == "    return a + b" and result["undone"][5] == "    return a * b"


BEFORE_READY = r"""
  local agent = require("lsp_agent")
  agent.setup({ cmd = { env.PYTHON, "-m", "lsp_agent", "serve" }, root_dir = env.ROOT,
                init_options = { model = "scripted/test", script = env.SCRIPT } })
  local c = vim.lsp.get_client_by_id(agent.client_id)
  result.ready_at_once = c ~= nil and c.initialized == true
  agent.run("typed while starting")                 -- the Lua API the chat buffer calls
  wait("the run", function() return agent.last_finish ~= nil end)
  result.stop = agent.last_finish.stopReason
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_a_prompt_given_through_the_lua_api_before_the_server_is_ready_runs(
        nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    script = write_script(tmp_path / "script.json", [reply(text="hello back")])
    result = run_nvim(nvim, tmp_path, BEFORE_READY, root=root,
                      env={"SCRIPT": str(script), "XDG_DATA_HOME": str(tmp_path / "data")})
    assert result["ready_at_once"] is False
    assert result["stop"] == "final"
    assert "== typed while starting" in result["events"] and "hello back" in result["events"]
    assert result["notes"] == [], result["notes"]


ON_DISK = r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  vim.cmd("AgentRun fix add")
  wait("the run", function() return agent.last_finish ~= nil end)
  result.loaded_before = vim.fn.bufloaded(env.ROOT .. "/calc.py") == 1
  vim.cmd("AgentReview")                            -- the pre-run text comes from the server's checkpoint
  wait("the review list", function() return vim.fn.getqflist({ title = 0 }).title == "lsp-agent review" end)
  result.qf = vim.fn.getqflist({ items = 0 }).items[1].text
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<CR>", true, false, true), "mtx", false)
  local real = vim.fn.bufnr(env.ROOT .. "/calc.py")
  result.opened = vim.api.nvim_get_current_buf() == real and vim.wo.diff
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    local buf = vim.api.nvim_win_get_buf(win)
    if buf ~= real and vim.api.nvim_win_get_option(win, "diff") then
      result.pre_run = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    end
  end
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.api.nvim_feedkeys("\\r", "mtx", false)
  result.disk = vim.fn.readfile(env.ROOT .. "/calc.py")
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_a_file_written_on_disk_is_reviewed_against_the_server_s_checkpoint(
        nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "calc.py").write_text(CALC, encoding="utf-8")
    script = write_script(tmp_path / "script.json", [
        reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n")),
        reply(text="fixed"),
    ])
    result = run_nvim(nvim, tmp_path, ON_DISK, root=root,
                      env={"SCRIPT": str(script), "XDG_DATA_HOME": str(tmp_path / "data")})
    assert result["loaded_before"] is False  # not open in Neovim: the server wrote the file itself
    assert result["qf"] == "+1 -1"
    assert result["opened"] is True and result["pre_run"] == CALC.splitlines()
    assert result["disk"] == CALC.splitlines()


APPLY = r"""
  local checkpoint = require("lsp_agent.review_checkpoint")
  result.outputs = {}
  for i, case in ipairs(vim.json.decode(env.CASES)) do
    local section = checkpoint.sections(case.diff)[case.path]
    result.outputs[i] = section and checkpoint.apply(case.now, section) or vim.NIL
  end
"""

# (now, then): edits at the top, in the middle, at the end, an emptied file, a created one
APPLY_CASES = [
    ("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", "x\na\nb\nc\nd\nE\nf\ng\nh\ni\n"),
    ("", "one\ntwo\n"),
    ("one\ntwo\n", ""),
    ("keep\nlast", "keep\nlast\nmore\n"),
]


@pytest.mark.parametrize("nvim", NVIMS[-1:])
def test_the_checkpoint_diff_applied_to_the_file_now_gives_the_file_then(nvim: str, tmp_path: Path) -> None:
    cases = []
    for now, then in APPLY_CASES:
        diff = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                       for line in difflib.unified_diff(now.splitlines(keepends=True),
                                                        then.splitlines(keepends=True), "a/f.py", "b/f.py"))
        cases.append({"path": "f.py", "diff": diff, "now": now.splitlines()})
    result = run_nvim(nvim, tmp_path, APPLY, root=tmp_path, env={"CASES": json.dumps(cases)})
    assert result["outputs"] == [then.splitlines() for _, then in APPLY_CASES]


LIVE = r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  local real = vim.api.nvim_get_current_buf()
  vim.cmd("AgentRun fix add, then mul")
  wait("the first edit", function() return vim.api.nvim_buf_get_lines(real, 1, 2, false)[1] == "    return a + b" end)
  wait("step 2", function() return agent.statusline() == "agent: running step 2/40" end)
  vim.cmd("AgentReview")                            -- while the run still streams
  result.qf_running = vim.fn.getqflist({ items = 0 }).items[1].text
  local f = assert(io.open(env.ROOT .. "/gate", "w"))
  f:close()
  wait("the run", function() return agent.last_finish ~= nil end)
  result.qf_done = vim.fn.getqflist({ items = 0 }).items[1].text  -- followed the second edit by itself
  result.statusline = agent.statusline()
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_the_review_list_follows_the_run_s_edits_while_it_streams(
        nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "calc.py").write_text(CALC, encoding="utf-8")
    script = write_script(tmp_path / "script.json", [
        reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n")),
        reply(call("run_command", command=wait_for("gate"))),
        reply(call("apply_patch", path="calc.py", old_text="def mul(a, b):\n    return a + b\n",
                   new_text="def mul(a, b):\n    return a * b\n")),
        reply(text="fixed"),
    ])
    result = run_nvim(nvim, tmp_path, LIVE, root=root, args=[str(root / "calc.py")],
                      env={"SCRIPT": str(script), "XDG_DATA_HOME": str(tmp_path / "data")})
    assert result["qf_running"] == "+1 -1"
    assert result["qf_done"] == "+2 -2"
    assert result["statusline"] == "agent: not verified"


STATUSLINE = r"""
  local runstate = require("lsp_agent.runstate")
  local agent = require("lsp_agent")
  local function event(generation, e) runstate.observe({ sessionID = "ses_1", generation = generation, event = e }) end
  result.lines = { agent.statusline() }
  event("g1", { type = "step_start", step = 3, maxSteps = 50 })
  table.insert(result.lines, agent.statusline())
  event("g1", { type = "run_finish", stopReason = "final", verification = "failed", steps = 3 })
  table.insert(result.lines, agent.statusline())
  event("g2", { type = "step_start", step = 1, maxSteps = 2 })
  event("g2", { type = "run_finish", stopReason = "step_limit", verification = "not_run", steps = 2 })
  table.insert(result.lines, agent.statusline())
  event("g3", { type = "run_finish", stopReason = "final", verification = "verified", steps = 1 })
  table.insert(result.lines, agent.statusline())
  runstate.handlers["agent/verificationChanged"](nil, { sessionID = "ses_1", verification = "not_run" }, {})
  table.insert(result.lines, agent.statusline())
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_statusline_words(nvim: str, tmp_path: Path) -> None:
    result = run_nvim(nvim, tmp_path, STATUSLINE, root=tmp_path)
    assert result["lines"] == ["", "agent: running step 3/50", "agent: checks failed",
                               "agent: stopped (step_limit) · not verified", "agent: verified", "agent: not verified"]
