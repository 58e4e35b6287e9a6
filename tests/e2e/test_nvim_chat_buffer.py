"""Real headless Neovim (0.7 and 0.12) driving the chat buffer with real keys against the real server and
the scripted model: a prompt with #buffer and #selection is sent with <CR>, the run streams in,
the tool call is one folded line that `zo` opens, an approval is answered inside the chat, the
stop line says the verification in the VS Code footer's words, and the queue section reorders and
cancels rows while a run streams."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import write_script
from tests.e2e.nvim_harness import NVIMS, run_nvim
from tests.helpers import call, reply, verify_config

CHAT_NVIMS = NVIMS  # Debian's 0.7 too: the chat uses nothing newer

CHAT_HELPERS = r"""
  local function keys(s) vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(s, true, false, true), "x", false) end
  local function chat_buf() return vim.fn.bufnr("lsp-agent://chat") end
  local function chat_lines() return vim.api.nvim_buf_get_lines(chat_buf(), 0, -1, false) end
  local function find_line(pattern)
    for i, line in ipairs(chat_lines()) do
      if line:find(pattern) then return i end
    end
    return nil
  end
  local function session(agent)
    local c = vim.lsp.get_client_by_id(agent.client_id)
    local got = nil
    local function on_reply(err, r) got = r or err end
    if vim.fn.has("nvim-0.11") == 1 then
      c:request("agent/session", { sessionID = agent.session_id }, on_reply)
    else
      c.request("agent/session", { sessionID = agent.session_id }, on_reply)
    end
    wait("agent/session", function() return got ~= nil end)
    return got
  end
"""

RUN_BODY = CHAT_HELPERS + r"""
  -- The user, when the approval block shows: presses 1 (the cursor goes to "Allow once"), then <CR>.
  local answered = false
  local timer = vim.loop.new_timer()
  timer:start(50, 50, vim.schedule_wrap(function()
    if not answered and chat_buf() ~= -1 and find_line("^%*%*Approve run_command%?%*%*") then
      answered = true
      result.block = chat_lines()
      vim.api.nvim_input("1<CR>")
    end
  end))
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT,
                                         approvalPolicy = "untrusted" } })
  local code_win = vim.api.nvim_get_current_win()
  keys("ggVj:AgentChatAdd<CR>")             -- lines 1-2 of app.py become #selection; the chat opens
  result.prompt_after_add = vim.api.nvim_get_current_line()
  keys("A #buffer check it<Esc><CR>")      -- <CR> in normal mode sends
  wait("the run", function() return agent.last_finish ~= nil end)
  timer:stop()
  wait("the stop line", function() return find_line("^■ ") ~= nil end)
  result.lines = chat_lines()
  local tool = find_line("^▸ run_command")
  result.closed_before = vim.fn.foldclosed(tool)
  vim.api.nvim_win_set_cursor(0, { tool, 0 })
  keys("zo")
  result.closed_after = vim.fn.foldclosed(tool)
  keys("zc")
  result.closed_again = vim.fn.foldclosed(tool)
  result.tool_line = tool
  result.filetype = vim.bo[chat_buf()].filetype
  result.code_foldmethod = vim.api.nvim_win_get_option(code_win, "foldmethod")
  result.session = session(agent)
  -- a second run: its tool call (the model numbers calls from 0 again) gets a line of its own
  agent.last_finish = nil
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 0 })
  keys("ccand read it<Esc><CR>")
  wait("the second run", function() return agent.last_finish ~= nil end)
  wait("its stop line", function() return #vim.tbl_filter(function(l) return l:find("^■ ") ~= nil end,
                                                          chat_lines()) == 2 end)
  result.second = chat_lines()
"""


@pytest.mark.parametrize("nvim", CHAT_NVIMS)
def test_chat_sends_with_context_folds_tool_output_and_approves_inline(nvim: str, tmp_path: Path,
                                                                      isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("import sys\nprint('hello')\nsys.exit(0)\n", encoding="utf-8")
    script = write_script(tmp_path / "script.json", [
        reply(call("run_command", command="python3 -c \"print('hi from the tool')\"")),
        reply(text="The tool said hi."),
        reply(call("read_file", path="app.py")),
        reply(text="Read it."),
    ])
    result = run_nvim(nvim, tmp_path, RUN_BODY, root=root, env={"SCRIPT": str(script)},
                      args=[str(root / "app.py")])
    assert result["prompt_after_add"] == "#selection"
    assert result["filetype"] == "markdown"
    assert result["code_foldmethod"] == "manual"  # the chat's folding stays its own
    lines: list[str] = result["lines"]
    assert "**You:** #selection #buffer check it" in lines
    # the approval block: the exact command, each choice with its scope
    block = "\n".join(result["block"])
    assert "python3 -c 'print('\"'\"'hi from the tool'\"'\"')'" in block
    assert "  [1] Allow once" in block and "  [3] Deny" in block
    assert "[2] Allow for this session: exactly `python3 -c" in block
    tool = lines[result["tool_line"] - 1]
    assert tool.startswith("▸ run_command: python3 -c \"print('hi from the tool')\"  ✓ "), tool
    assert "  │ hi from the tool" in lines[result["tool_line"]:result["tool_line"] + 3]
    assert result["closed_before"] == result["tool_line"]  # folded to its one line
    assert result["closed_after"] == -1                     # zo opened it
    assert result["closed_again"] == result["tool_line"]
    assert "The tool said hi." in lines
    stop = next(line for line in lines if line.startswith("■ "))
    assert stop == ("■ not run — Not run: no check ran in this task.  "
                    "(stop: final · 2 steps · 1 tool call (0 errors))"), stop
    assert not any("Approve" in line for line in lines)  # the block went away once answered
    # the server received both attachments with the prompt
    stored = json.dumps(result["session"])
    assert "[attachment 1: selection app.py:1-2]\\nimport sys\\nprint('hello')" in stored, stored[:2000]
    assert "[attachment 2: buffer app.py]\\nimport sys" in stored
    second: list[str] = result["second"]
    assert second[:len(lines) - 2] == lines[:-2]  # the first run's lines stay as they were
    assert [line.split("  ")[0] for line in second if line.startswith("▸ ")] == [
        "▸ run_command: python3 -c \"print('hi from the tool')\"", "▸ read_file: app.py"]


QUEUE_BODY = CHAT_HELPERS + r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  vim.cmd("AgentChat")
  keys("ifirst task<Esc><CR>")
  wait("the first run", function() return agent.generation ~= nil end)
  keys("ccsecond<Esc><CR>")
  wait("second queued", function() return find_line("^  1%. queued  second") ~= nil end)
  keys("ccthird<Esc><CR>")
  wait("third queued", function() return find_line("^  2%. queued  third") ~= nil end)
  result.queued = chat_lines()
  vim.api.nvim_win_set_cursor(0, { find_line("^  2%. queued  third"), 0 })
  keys("qk")
  wait("third moved up", function() return find_line("^  1%. queued  third") ~= nil end)
  vim.api.nvim_win_set_cursor(0, { find_line("^  1%. queued  third"), 0 })
  keys("qj")
  wait("third moved down", function() return find_line("^  2%. queued  third") ~= nil end)
  vim.api.nvim_win_set_cursor(0, { find_line("^  2%. queued  third"), 0 })
  keys("qk")
  wait("third moved up again", function() return find_line("^  1%. queued  third") ~= nil end)
  vim.ui.input = function(opts, on_confirm) on_confirm(opts.default .. " edited") end
  vim.api.nvim_win_set_cursor(0, { find_line("^  2%. queued  second"), 0 })
  keys("qe")
  wait("second edited", function() return find_line("^  2%. queued  second edited") ~= nil end)
  keys("qd")
  wait("second cancelled", function() return find_line("queued  second") == nil end)
  result.after_cancel = chat_lines()
  result.still_running = agent.generation ~= nil
  -- <C-s> in insert mode steers what is typed into the running generation
  local before = vim.tbl_count(agent.receipts)
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 0 })
  keys("ccbe brief<C-s><Esc>")
  wait("the correction's receipt", function() return vim.tbl_count(agent.receipts) > before end)
  result.steer_prompt = vim.api.nvim_get_current_line()
  -- qs on a queued row steers it into the running generation: it leaves the queue
  keys("ccfourth<Esc><CR>")
  wait("fourth queued", function() return find_line("^  %d%. queued  fourth") ~= nil end)
  vim.api.nvim_win_set_cursor(0, { find_line("^  %d%. queued  fourth"), 0 })
  keys("qs")
  wait("fourth steered", function() return find_line("queued  fourth") == nil end)
  result.still_running_after_qs = agent.generation ~= nil
  wait("third ran", function()
    local third = find_line("^%*%*You:%*%* third")
    return third ~= nil and #vim.tbl_filter(function(l) return l:find("^■ ") ~= nil end,
                                            vim.list_slice(chat_lines(), third)) > 0
  end)
  result.lines = chat_lines()
"""


@pytest.mark.parametrize("nvim", CHAT_NVIMS)
def test_chat_queue_section_reorders_and_cancels_while_a_run_streams(nvim: str, tmp_path: Path,
                                                                     isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    # the first answer takes a while, so the queue is edited while it streams
    script = write_script(tmp_path / "script.json", [
        reply(text="First done.", delay_ms=8000),
        reply(text="Next done."),
    ], repeat_last=True)
    result = run_nvim(nvim, tmp_path, QUEUE_BODY, root=root, env={"SCRIPT": str(script)})
    assert any(line.startswith("Queue (qe edit · qk/qj move · qs steer now · qd cancel)") for line in result["queued"])
    assert result["still_running"] is True
    lines: list[str] = result["lines"]
    assert "**You:** first task" in lines and "**You:** third" in lines
    assert "**You:** second" not in lines and "**You:** second edited" not in lines
    assert "**You (steering):** be brief" in lines and result["steer_prompt"] == ""
    steered = lines.index("**You (steering):** be brief")
    assert any(line.startswith("_correction accepted") for line in lines[steered:]), lines
    assert result["still_running_after_qs"] is True and "**You:** fourth" not in lines
    assert lines.index("**You:** third") > lines.index("First done.")


CHECK_BODY = CHAT_HELPERS + r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT },
                        chat = { layout = "float" } })
  vim.cmd("AgentChat")
  result.float = vim.api.nvim_win_get_config(0).relative ~= ""
  -- a file that does not exist: refused before sending, the prompt is kept
  keys("iread #file:nope.py<Esc><CR>")
  result.kept = vim.api.nvim_get_current_line()
  result.generation_after_refusal = agent.generation or "none"
  keys("ccread #file:calc.py then check<Esc><CR>")
  wait("the run", function() return agent.last_finish ~= nil end)
  wait("the stop line", function() return find_line("^■ ") ~= nil end)
  result.lines = chat_lines()
  local check = find_line("^▸ verify_project")
  result.check_closed = vim.fn.foldclosed(check)
  result.check_line = check
  result.session = session(agent)
"""


@pytest.mark.parametrize("nvim", CHAT_NVIMS)
def test_chat_shows_a_failing_check_expanded_and_keeps_a_refused_prompt(nvim: str, tmp_path: Path,
                                                                        isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (root / "check.py").write_text("print('FAILED test_add: 1 + 2 != -1')\nraise SystemExit(1)\n", encoding="utf-8")
    verify_config(root, [sys.executable, "check.py"])
    script = write_script(tmp_path / "script.json", [reply(call("verify_project")), reply(text="It fails.")])
    result = run_nvim(nvim, tmp_path, CHECK_BODY, root=root, env={"SCRIPT": str(script)})
    assert result["float"] is True
    assert result["kept"] == "read #file:nope.py"
    assert result["generation_after_refusal"] == "none"
    assert any("#file:nope.py: no such file in the workspace" in n["msg"] and "prompt is kept" in n["msg"]
               for n in result["notes"]), result["notes"]
    lines: list[str] = result["lines"]
    assert lines[result["check_line"] - 1].startswith("▸ verify_project  ✗"), lines
    assert result["check_closed"] == -1  # a failing check is shown expanded
    assert any("FAILED test_add" in line for line in lines[result["check_line"]:])
    stop = next(line for line in lines if line.startswith("■ "))
    assert stop.startswith("■ failed — Failed: the last check failed, and nothing was written after it that "
                           "could have fixed it.  (stop: final · 2 steps · 1 tool call"), stop
    assert "[attachment 1: the file calc.py — read it with read_file]" in json.dumps(result["session"],
                                                                                    ensure_ascii=False)


SLASH_BODY = CHAT_HELPERS + r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  vim.diagnostic.set(vim.api.nvim_create_namespace("test"), vim.api.nvim_get_current_buf(),
                     { { lnum = 1, col = 4, severity = vim.diagnostic.severity.ERROR, message = "bad add" } })
  vim.cmd("AgentChat")
  keys("i/frobnicate<Esc><CR>")
  result.unknown_kept = vim.api.nvim_get_current_line()
  keys("cc/mode plan<Esc><CR>")
  wait("the mode line", function() return find_line("^_mode:_ plan") ~= nil end)
  result.mode_prompt = vim.api.nvim_get_current_line()
  -- /rewind is :AgentRewind (replaced here by one that records its call) ...
  vim.api.nvim_create_user_command("AgentRewind", function(c) result.rewind_args = c.args end,
                                   { nargs = "?", force = true })
  keys("cc/rewind<Esc><CR>")
  result.rewind_prompt = vim.api.nvim_get_current_line()
  -- ... and without it, says it is not available and keeps the prompt
  vim.api.nvim_del_user_command("AgentRewind")
  keys("cc/rewind<Esc><CR>")
  result.rewind_kept = vim.api.nvim_get_current_line()
  keys("cc/mode agent<Esc><CR>")
  wait("the mode back", function() return find_line("^_mode:_ agent") ~= nil end)
  keys("ccwhat is wrong #diagnostics<Esc><CR>")
  wait("the run", function() return agent.last_finish ~= nil end)
  result.session = session(agent)
  keys("cc/compact<Esc><CR>")
  wait("the compact line", function() return find_line("^_compact:_ ") ~= nil end)
  keys("cc/model scripted/test<Esc><CR>")
  result.model_line = chat_lines()[find_line("^_model:_ ")]
  keys("cc#file:ca<C-x><C-o><Esc>")   -- completes the one workspace path that matches
  result.completed = vim.api.nvim_get_current_line()
  keys("cc/new<Esc><CR>")
  result.session_after_new = agent.session_id or "none"
  result.lines = chat_lines()
"""


@pytest.mark.parametrize("nvim", CHAT_NVIMS)
def test_chat_slash_commands_and_diagnostics_context(nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    script = write_script(tmp_path / "script.json", [reply(text="The add is wrong.")])
    result = run_nvim(nvim, tmp_path, SLASH_BODY, root=root, env={"SCRIPT": str(script)},
                      args=[str(root / "calc.py")])
    notes = [n["msg"] for n in result["notes"]]
    assert result["unknown_kept"] == "/frobnicate"
    assert any("unknown command /frobnicate (known: /new, /compact, /model, /mode, /rewind)" in n for n in notes)
    assert result["mode_prompt"] == ""
    assert result["rewind_args"] == "" and result["rewind_prompt"] == ""
    assert result["rewind_kept"] == "/rewind"
    assert any("/rewind is not available" in n for n in notes), notes
    stored = json.dumps(result["session"])
    assert "[attachment 1: diagnostics calc.py]\\ncalc.py:2:5: error: bad add" in stored, stored[:1500]
    assert result["completed"] == "#file:calc.py"
    assert any(line.startswith("_compact:_ freed_too_little · ") for line in result["lines"]), result["lines"]
    assert result["model_line"] == "_model:_ scripted/test (for the runs this chat starts)"
    assert result["session_after_new"] == "none"
    assert "── new session ──" in result["lines"]


REFUSED_BODY = CHAT_HELPERS + r"""
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT } })
  vim.cmd("AgentChat")
  keys("isummarize #buffer<Esc><CR>")
  wait("the refusal", function() return #notes > 0 end)
  result.kept = vim.api.nvim_get_current_line()
  result.generation = agent.generation or "none"
"""


@pytest.mark.parametrize("nvim", CHAT_NVIMS)
def test_a_prompt_the_server_refuses_stays_and_the_notification_says_what_to_do(nvim: str, tmp_path: Path,
                                                                                 isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "big.txt").write_text("x" * 80 + "\n" * 1 + ("y" * 99 + "\n") * 2100, encoding="utf-8")
    script = write_script(tmp_path / "script.json", [reply(text="never")])
    result = run_nvim(nvim, tmp_path, REFUSED_BODY, root=root, env={"SCRIPT": str(script)},
                      args=[str(root / "big.txt")])
    assert result["kept"] == "summarize #buffer"
    assert result["generation"] == "none"
    (note,) = [n["msg"] for n in result["notes"]]
    assert note.startswith("lsp-agent: agent/run refused (attachment_refused): "), note
    assert note.endswith("(remove or shorten the attachment, then send again)"), note


TYPED_AHEAD_BODY = CHAT_HELPERS + r"""
  local answered = false
  local timer = vim.loop.new_timer()
  timer:start(50, 50, vim.schedule_wrap(function()
    if not answered and chat_buf() ~= -1 and find_line("^%*%*Approve run_command%?%*%*") then
      answered = true
      vim.api.nvim_input("3<CR>") -- the user reads the question and denies
    end
  end))
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT,
                                         approvalPolicy = "untrusted" } })
  vim.cmd("AgentChat")
  keys("imake it<Esc><CR>")
  vim.api.nvim_input("1<CR>") -- typed before the question appeared: must not answer it
  wait("the run", function() return agent.last_finish ~= nil end)
  timer:stop()
  result.made = vim.loop.fs_stat(env.ROOT .. "/made.txt") ~= nil
  result.lines = chat_lines()
"""


@pytest.mark.parametrize("nvim", CHAT_NVIMS)
def test_keys_typed_before_an_approval_question_do_not_answer_it(nvim: str, tmp_path: Path,
                                                                 isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = write_script(tmp_path / "script.json", [
        reply(call("run_command", command="python3 -c \"open('made.txt', 'w').write('x')\""), delay_ms=300),
        reply(text="tried"),
    ])
    result = run_nvim(nvim, tmp_path, TYPED_AHEAD_BODY, root=root, env={"SCRIPT": str(script)})
    assert result["made"] is False and not (root / "made.txt").exists()
    assert any(line.startswith("! denied (deny, by user (editor))") for line in result["lines"]), result["lines"]


EARLY_BODY = CHAT_HELPERS + r"""
  vim.g.lsp_agent = { cmd = { env.PYTHON, "-m", "lsp_agent", "serve" }, root_dir = env.ROOT,
                      init_options = { model = "scripted/test", script = env.SCRIPT },
                      chat = { layout = "horizontal" } }
  local width = vim.api.nvim_win_get_width(0)
  vim.cmd("AgentChat")                      -- opens at once; the server starts meanwhile
  result.opened_before_ready = vim.api.nvim_buf_get_name(0):find("lsp%-agent://chat") ~= nil
  result.full_width = vim.api.nvim_win_get_width(0) == width -- vim.g.lsp_agent's layout: at the bottom
  keys("iearly bird<Esc><CR>")             -- sent before `initialize` answered: it waits
  local agent = require("lsp_agent")
  wait("the run", function() return agent.last_finish ~= nil end)
  wait("the stop line", function() return find_line("^■ ") ~= nil end)
  result.lines = chat_lines()
"""


@pytest.mark.parametrize("nvim", CHAT_NVIMS)
def test_a_chat_prompt_sent_before_the_server_is_ready_waits_and_runs(nvim: str, tmp_path: Path,
                                                                      isolated_state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = write_script(tmp_path / "script.json", [reply(text="Early answer.")])
    result = run_nvim(nvim, tmp_path, EARLY_BODY, root=root, env={"SCRIPT": str(script)})
    assert result["opened_before_ready"] is True and result["full_width"] is True
    lines: list[str] = result["lines"]
    assert lines[:3] == ["**You:** early bird", "", "Early answer."], lines
    assert not any("not running" in n["msg"] for n in result["notes"]), result["notes"]
