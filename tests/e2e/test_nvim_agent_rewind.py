"""Real headless Neovim (0.7 and 0.12) with the plugin: `:AgentRewind` picks a user message or step
through vim.ui.select (a scripted chooser here), previews the diff, restores an open buffer through
an edit `u` undoes and closed files on disk, asks about files changed outside the agent, makes a
conversation fork current, and `:AgentRewind undo` takes the last rewind back."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import write_script
from tests.e2e.nvim_harness import NVIMS, PLUGIN, run_nvim
from tests.helpers import call, git_repo, reply

BODY = r"""
  result.asked = {}
  local answers = {}
  -- The user: looks at the choices, then picks one (after the current callback, as a UI plugin does).
  vim.ui.select = function(items, opts, on_choice)
    table.insert(result.asked, { kind = opts.kind, prompt = opts.prompt,
                                 labels = vim.tbl_map(opts.format_item, items) })
    local pick = table.remove(answers, 1)
    vim.schedule(function() on_choice(pick and pick(items) or nil) end)
  end
  local function first_message(items)
    for _, entry in ipairs(items) do
      if entry.label:find("^you: ") then return entry end
    end
  end
  local function say(name) return function() return name end end
  local function notes_after(n, what)
    wait(what, function() return #notes > n end)
    return notes[#notes].msg
  end
  local function read(path)
    local f = io.open(env.ROOT .. "/" .. path)
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return s
  end

  vim.cmd("edit " .. vim.fn.fnameescape(env.ROOT .. "/a.txt"))
  local buf = vim.api.nvim_get_current_buf()
  local agent = start({ init_options = { model = "scripted/test", script = env.SCRIPT, approvalPolicy = "never" } })
  vim.cmd("AgentRun change things")
  wait("the run", function() return agent.last_finish ~= nil end)
  local original = agent.session_id
  result.after_run = vim.api.nvim_buf_get_lines(buf, 0, -1, false)

  -- preview: the diff in a scratch buffer, nothing changed
  answers = { first_message, say("preview") }
  vim.cmd("AgentRewind")
  wait("the preview", function() return vim.bo.filetype == "diff" end)
  result.preview = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  result.preview_name = vim.api.nvim_buf_get_name(0)
  vim.cmd("close")
  result.notes_after_preview = read("notes.txt")

  -- code, with notes.txt changed outside the agent: asked, and kept
  local f = assert(io.open(env.ROOT .. "/notes.txt", "w"))
  f:write("mine\n")
  f:close()
  answers = { first_message, say("code"), say("keep") }
  local n = #notes
  vim.cmd("AgentRewind")
  result.code_note = notes_after(n, "the code rewind")
  result.buffer_restored = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  result.notes_kept = read("notes.txt")
  result.made_after_rewind = read("made.txt")
  vim.api.nvim_set_current_buf(buf)
  vim.cmd("normal! u")
  result.buffer_undone = vim.api.nvim_buf_get_lines(buf, 0, -1, false)

  n = #notes
  vim.cmd("AgentRewind undo")
  result.undo_note = notes_after(n, "the undo")
  result.made_after_undo = read("made.txt")

  -- conversation: the fork becomes the session :AgentRun continues; undo makes the original current again
  answers = { first_message, say("conversation") }
  n = #notes
  vim.cmd("AgentRewind")
  result.fork_note = notes_after(n, "the conversation rewind")
  result.fork = agent.session_id
  result.original = original
  n = #notes
  vim.cmd("AgentRewind undo")
  notes_after(n, "the conversation undo")
  result.current_after_undo = agent.session_id

  -- the outside change again, now restored too on the user's word
  answers = { first_message, say("code"), say("restore") }
  n = #notes
  vim.cmd("AgentRewind")
  result.confirmed_note = notes_after(n, "the confirmed rewind")
  result.notes_confirmed = read("notes.txt")
  result.last_asked = result.asked[#result.asked].kind
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_agent_rewind_picker_code_conflicts_undo_and_conversation(nvim: str, tmp_path: Path,
                                                                  isolated_state: Path) -> None:
    root = git_repo(tmp_path / "ws", {"a.txt": "one\n", "notes.txt": "first\n"})
    script = write_script(tmp_path / "script.json", [
        reply(call("apply_patch", path="a.txt", old_text="one\n", new_text="two\n")),
        reply(call("apply_patch", path="notes.txt", old_text="first\n", new_text="second\n")),
        reply(call("write_file", path="made.txt", content="made\n")),
        reply(text="done"),
    ])
    result = run_nvim(nvim, tmp_path, BODY, root=root, env={"SCRIPT": str(script)})
    assert result["after_run"] == ["two"]

    picker, what = result["asked"][:2]
    assert picker["kind"] == "lsp_agent_rewind" and picker["labels"][-1] == "you: change things"
    assert picker["labels"][0] == "step: write_file — made.txt", picker["labels"]  # newest first
    assert "step: apply_patch — notes.txt" in picker["labels"]
    assert what["kind"] == "lsp_agent_rewind_what" and len(what["labels"]) == 4

    assert result["preview_name"].endswith("lsp-agent://rewind-preview")
    assert "-second" in result["preview"] and "+first" in result["preview"], result["preview"]
    assert result["notes_after_preview"] == "second\n"  # a preview changes nothing

    conflict = result["asked"][4]
    assert conflict["kind"] == "lsp_agent_rewind_conflicts" and "notes.txt" in conflict["prompt"]
    assert conflict["labels"] == ["Keep mine", "Restore them too"]
    assert result["buffer_restored"] == ["one"]  # the open buffer, through the edit
    assert result["notes_kept"] == "mine\n" and result.get("made_after_rewind") is None  # kept; closed file on disk
    assert "kept (changed outside the agent): notes.txt" in result["code_note"]
    assert "undo: :AgentRewind undo (ckpt-" in result["code_note"]
    assert result["buffer_undone"] == ["two"]  # `u` brings the buffer back

    assert "rewind undone" in result["undo_note"] and result["made_after_undo"] == "made\n"

    assert result["fork"] not in (None, result["original"])
    assert f"the conversation continues in {result['fork']}" in result["fork_note"]
    assert result["current_after_undo"] == result["original"]
    assert result["last_asked"] == "lsp_agent_rewind_conflicts" and result["notes_confirmed"] == "first\n"
    assert "kept" not in result["confirmed_note"]


HELP = r"""
  result.defined = vim.fn.exists(":AgentRewind") == 2
  result.completion = vim.fn.getcompletion("AgentRewind ", "cmdline")
  vim.cmd("helptags " .. vim.fn.fnameescape(env.PLUGIN_COPY .. "/doc"))
  result.messages = vim.fn.execute("messages")
  vim.cmd("help :AgentRewind")
  result.help_line = vim.fn.getline(".")
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_agent_rewind_is_defined_at_startup_and_documented(nvim: str, tmp_path: Path) -> None:
    copy = tmp_path / "plugin"  # :helptags writes doc/tags: into a copy, not the checkout
    shutil.copytree(PLUGIN, copy, ignore=shutil.ignore_patterns("tags"))
    result = run_nvim(nvim, tmp_path, HELP, root=tmp_path, env={"PLUGIN_COPY": str(copy)},
                      load=["--cmd", f"set rtp^={copy}"])
    assert result["defined"] is True and result["completion"] == ["undo"]
    assert not re.search(r"\bE\d+:", result["messages"]), result["messages"]  # :helptags is clean
    assert "*:AgentRewind*" in result["help_line"]
    assert result["notes"] == []  # defining the command loads nothing and says nothing
