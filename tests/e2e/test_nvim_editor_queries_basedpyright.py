"""Neovim answers the server's editor queries from a REAL language server: basedpyright attached
beside lsp-agent on a small Python project, the way a user's config (or nvim-lspconfig) starts it.
A scripted run calls find_definition, find_references and hover; their results name the right
files and lines. With `editor_queries = false` the client declares nothing and the model is offered
none of the tools."""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.e2e.conftest import write_script
from tests.e2e.nvim_harness import NVIMS, health_lines, run_nvim
from tests.helpers import call, reply
from tests.providers.loopback import LoopbackServer, Reply, turn

BASEDPYRIGHT = shutil.which("basedpyright-langserver", path=str(Path(sys.executable).parent))
needs_basedpyright = pytest.mark.skipif(BASEDPYRIGHT is None, reason="basedpyright is not installed (the dev extra)")

CALC = 'def add(a: int, b: int) -> int:\n    """Adds two numbers."""\n    return a + b\n'
# "é" before the call: its UTF-8, UTF-16 and code-point columns differ, so a position that skipped
# the encoding conversion would land on the wrong character.
MAIN = 'from calc import add\n\nprint("é", add(1, 2))\n'
REPORT = 'from calc import add\n\nTOTAL = add(3, 4)\n\n\ndef total() -> int:\n    return add(TOTAL, "5")\n'

KINDS = ["definition", "references", "hover", "documentSymbols", "workspaceSymbols", "diagnostics", "typeDefinition",
         "implementation", "callHierarchy"]
EDITOR_TOOLS = {"find_definition", "find_references", "hover", "document_symbols", "workspace_symbols",
                "editor_diagnostics", "find_implementations"}

# basedpyright for Python buffers, started from a FileType autocommand as a user's config does;
# main.py is opened before lsp-agent starts. The tool results come from the agent/event stream.
BODY = r"""
  local function start_basedpyright(bufnr)
    -- through a shell that notes the server's process id (a test pauses it)
    local cmd = { "sh", "-c", 'echo $$ > "$ROOT/../basedpyright.pid"; exec "$BASEDPYRIGHT" --stdio' }
    local config = { name = "basedpyright", cmd = cmd, root_dir = env.ROOT,
                     settings = { basedpyright = { analysis = { diagnosticMode = "openFilesOnly" } } } }
    if vim.lsp.start then
      vim.lsp.start(config, { bufnr = bufnr })
    else
      _G.basedpyright_id = _G.basedpyright_id or vim.lsp.start_client(config)
      vim.lsp.buf_attach_client(bufnr, _G.basedpyright_id)
    end
  end
  vim.api.nvim_create_autocmd("FileType", { pattern = "python", callback = function(args)
    start_basedpyright(args.buf)
  end })
  vim.cmd("edit " .. vim.fn.fnameescape(env.ROOT .. "/main.py"))
  local agent = start({ editor_queries = EDITOR_QUERIES, init_options = { model = "scripted/test",
    script = env.SCRIPT, editorQueries = { timeoutS = 90 } } })
  wait("basedpyright", function()
    for _, c in ipairs(vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()) do
      if c.name == "basedpyright" and c.initialized then return true end
    end
    return false
  end, 90000)
  result.outputs = {}
  require("lsp_agent.bus").on("agent/event", function(params)
    local event = params.event
    if event.type == "tool_use" then
      table.insert(result.outputs, { tool = event.part.tool, status = event.part.state.status,
                                     output = event.part.state.output })
    end
  end)
  BEFORE_RUN
  agent.run("where is add defined and used?")
  wait("the run", function() return agent.last_finish ~= nil end, 240000)
  result.stop = agent.last_finish.stopReason
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
  AFTER_RUN
  vim.cmd("checkhealth lsp_agent")
  result.checkhealth = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  result.loaded = vim.fn.bufloaded(env.ROOT .. "/calc.py") == 1
  for _, c in ipairs(vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()) do
    if c.name == "basedpyright" then result.encoding = c.offset_encoding end
  end
"""


def make_project(root: Path) -> None:
    (root / ".lsp-agent").mkdir(parents=True)
    (root / "calc.py").write_text(CALC, encoding="utf-8")
    (root / "main.py").write_text(MAIN, encoding="utf-8")
    (root / "report.py").write_text(REPORT, encoding="utf-8")
    (root / "pyrightconfig.json").write_text('{"include": ["."]}\n', encoding="utf-8")


def outputs_by_tool(result: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for use in result["outputs"]:
        assert use["status"] == "completed", use
        found[use["tool"]] = use["output"]
    return found


@needs_basedpyright
@pytest.mark.parametrize("nvim", NVIMS)
def test_find_definition_references_and_hover_come_from_basedpyright(nvim: str, tmp_path: Path,
                                                                    isolated_state: Path) -> None:
    root = tmp_path / "ws"
    make_project(root)
    script = write_script(tmp_path / "script.json", [
        reply(call("find_definition", path="main.py", symbol="add", line=3)),
        reply(call("find_references", path="calc.py", symbol="add")),
        reply(call("hover", path="main.py", line=3, column=12)),
        reply(text="add is defined in calc.py and used in main.py and report.py")])
    body = BODY.replace("EDITOR_QUERIES", "true").replace("BEFORE_RUN", "").replace("AFTER_RUN", "")
    result = run_nvim(nvim, tmp_path, body, root=root, timeout=400,
                      env={"SCRIPT": str(script), "BASEDPYRIGHT": str(BASEDPYRIGHT)})

    assert result["stop"] == "final", result
    outputs = outputs_by_tool(result)
    assert outputs["find_definition"] == (
        "OK: 1 definition(s) for main.py:3:12:\ncalc.py:1:5: def add(a: int, b: int) -> int:")
    assert outputs["find_references"] == (
        "OK: 6 reference(s) for calc.py:1:5:\n"
        "calc.py:1:5: def add(a: int, b: int) -> int:\n"
        "main.py:1:18: from calc import add\n"
        'main.py:3:12: print("é", add(1, 2))\n'
        "report.py:1:18: from calc import add\n"
        "report.py:3:9: TOTAL = add(3, 4)\n"
        'report.py:7:12: return add(TOTAL, "5")')
    assert outputs["hover"].startswith("OK: hover at main.py:3:12:\n"), outputs["hover"]
    assert "def add(" in outputs["hover"] and "-> int" in outputs["hover"], outputs["hover"]
    assert "Adds two numbers." in outputs["hover"]
    # calc.py was never opened by the user: the plugin loaded it so basedpyright could answer, and
    # unloaded it after (a hidden loaded buffer would keep the agent's later edits of it unsaved)
    assert result["loaded"] is False
    assert result["encoding"] == "utf-16"
    assert ("OK", "language servers that answer for the files they are attached to: basedpyright") in health_lines(
        result["checkhealth"])


@pytest_asyncio.fixture
async def model() -> AsyncIterator[LoopbackServer]:
    srv = LoopbackServer()
    await srv.start()
    srv.fallback = Reply(chunks=[turn("chat", text="done")])
    yield srv
    await srv.close()


OFFERED = r"""
  local agent = start({ editor_queries = EDITOR_QUERIES, init_options = { model = "loop/m",
    providers = { loop = { baseUrl = env.MODEL_URL, maxRetries = 0 } } } })
  agent.run("hello")
  wait("the run", function() return agent.last_finish ~= nil end)
  result.stop = agent.last_finish.stopReason
  vim.cmd("checkhealth lsp_agent")
  result.checkhealth = vim.api.nvim_buf_get_lines(0, 0, -1, false)
"""


@pytest.mark.parametrize("nvim", NVIMS)
@pytest.mark.parametrize("option", ["true", "false", '{ "hover", "references" }'])
async def test_the_editor_queries_option_decides_which_tools_the_model_is_offered(
        nvim: str, option: str, tmp_path: Path, isolated_state: Path, model: LoopbackServer) -> None:
    root = tmp_path / "ws"
    (root / ".lsp-agent").mkdir(parents=True)
    body = OFFERED.replace("EDITOR_QUERIES", option)
    result = await asyncio.to_thread(run_nvim, nvim, tmp_path, body, root=root, env={"MODEL_URL": model.url})

    assert result["stop"] == "final", result
    (request,) = model.requests
    offered = {tool["function"]["name"] for tool in request.json()["tools"]}
    expected = {"true": EDITOR_TOOLS,
                "false": set(), '{ "hover", "references" }': {"find_references", "hover"}}[option]
    assert offered & EDITOR_TOOLS == expected
    # :checkhealth says what is declared (no language server here: an empty Neovim).
    said = {"true": "answered: " + ", ".join(KINDS), '{ "hover", "references" }': "answered: references, hover",
            "false": "off (editor_queries = false): the agent is offered no find_definition, find_references, "
                     "hover, ... tools"}[option]
    found = health_lines(result["checkhealth"])
    assert ("INFO", said) in found
    if option != "false":
        assert ("INFO", 'no other language server is running: the agent\'s queries get "no language server"') in found


@needs_basedpyright
@pytest.mark.parametrize("nvim", NVIMS)
def test_symbols_diagnostics_callers_and_a_file_with_no_language_server(nvim: str, tmp_path: Path,
                                                                       isolated_state: Path) -> None:
    root = tmp_path / "ws"
    make_project(root)
    (root / "lib.rs").write_text("fn add() {}\n", encoding="utf-8")
    script = write_script(tmp_path / "script.json", [
        reply(call("document_symbols", path="report.py")),
        reply(call("workspace_symbols", query="total")),
        reply(call("editor_diagnostics", path="report.py")),
        reply(call("find_implementations", path="calc.py", symbol="add", relation="callHierarchy")),
        reply(call("hover", path="lib.rs", line=1, column=4)),
        reply(text="done")])
    # report.py is the open file; the run starts once basedpyright has published its error there.
    body = BODY.replace("EDITOR_QUERIES", "true").replace('"/main.py"', '"/report.py"').replace(
        "BEFORE_RUN", 'wait("the diagnostics", function() return #vim.diagnostic.get(0) > 0 end, 90000)').replace(
        "AFTER_RUN", "")
    result = run_nvim(nvim, tmp_path, body, root=root, timeout=400,
                      env={"SCRIPT": str(script), "BASEDPYRIGHT": str(BASEDPYRIGHT)})

    assert result["stop"] == "final", result
    assert [use["tool"] for use in result["outputs"]] == [
        "document_symbols", "workspace_symbols", "editor_diagnostics", "find_implementations", "hover"]
    outputs = {use["tool"]: use["output"] for use in result["outputs"]}
    assert outputs["document_symbols"] == (
        "OK: 2 symbol(s) in report.py:\nConstant TOTAL (line 3)\nFunction total (line 6)")
    assert outputs["workspace_symbols"] == (
        "OK: 2 symbol(s) match 'total':\nConstant TOTAL: report.py:3:1\nFunction total: report.py:6:5")
    diagnostics = outputs["editor_diagnostics"]
    assert diagnostics.startswith("OK: 1 problem(s) in report.py:\nreport.py:7:23: error: "), diagnostics
    assert "reportArgumentType" in diagnostics
    assert outputs["find_implementations"] == (
        "OK: 3 caller(s) for calc.py:1:5:\n"
        '(module) main.py: main.py:3:12: print("é", add(1, 2))\n'
        "(module) report.py: report.py:3:9: TOTAL = add(3, 4)\n"
        'total: report.py:7:12: return add(TOTAL, "5")')
    assert outputs["hover"] == ("ERROR: no language server for .rs in the editor: no language server is attached "
                                "in Neovim for rust [no_language_server]")


# basedpyright has analysed the open buffer once it answers a hover there (lsp-agent answers none)
ANALYSED = r"""
  wait("basedpyright's analysis", function()
    local params = { textDocument = { uri = vim.uri_from_bufnr(0) }, position = { line = 2, character = 12 } }
    for _, answer in pairs(vim.lsp.buf_request_sync(0, "textDocument/hover", params, 5000) or {}) do
      if answer.result then return true end
    end
    return false
  end, 90000)
"""


@needs_basedpyright
@pytest.mark.parametrize("nvim", NVIMS)
def test_an_edit_that_breaks_the_types_comes_back_with_basedpyrights_new_error(nvim: str, tmp_path: Path,
                                                                              isolated_state: Path) -> None:
    """The agent's edit lands in the open buffer; basedpyright re-checks it, and the edit's own result
    carries the new error — not report.py's older one, and without making anything verified."""
    root = tmp_path / "ws"
    make_project(root)
    script = write_script(tmp_path / "script.json", [
        reply(call("apply_patch", path="main.py", old_text="add(1, 2)", new_text='add(1, "two")')),
        reply(text="main.py passes a string now")])
    # main.py is the open buffer, without errors; the run starts once basedpyright has analysed it
    body = BODY.replace("EDITOR_QUERIES", "true").replace("BEFORE_RUN", ANALYSED).replace(
        "AFTER_RUN", "result.buffer = vim.api.nvim_buf_get_lines(vim.fn.bufnr(env.ROOT .. '/main.py'), 0, -1, false)")
    result = run_nvim(nvim, tmp_path, body, root=root, timeout=400,
                      env={"SCRIPT": str(script), "BASEDPYRIGHT": str(BASEDPYRIGHT)})

    assert result["stop"] == "final", result
    assert result["buffer"][2] == 'print("é", add(1, "two"))'
    patched = outputs_by_tool(result)["apply_patch"]
    print(patched)
    assert "The editor reports 1 new error(s) in the edited files" in patched, patched
    assert "main.py:3:19: Argument of type" in patched and "[basedpyright reportArgumentType]" in patched, patched
    assert "only verify_project verifies" in patched
    assert "report.py" not in patched
    assert "verification: not_run" in result["events"][-1], result["events"][-1]


# basedpyright-langserver runs node as its child: the whole tree is paused, and resumed at the end.
PAUSE = r"""
  local function tree(pid, into)
    table.insert(into, pid)
    local f = io.open(string.format("/proc/%d/task/%d/children", pid, pid))
    for child in (f and f:read("*a") or ""):gmatch("%d+") do tree(tonumber(child), into) end
    if f then f:close() end
    return into
  end
  local paused = tree(tonumber(vim.fn.readfile(env.ROOT .. "/../basedpyright.pid")[1]), {})
  result.paused = #paused
  for _, pid in ipairs(paused) do vim.loop.kill(pid, "sigstop") end
"""
RESUME = r"""
  for _, pid in ipairs(paused) do vim.loop.kill(pid, "sigcont") end
"""


@needs_basedpyright
@pytest.mark.parametrize("nvim", NVIMS)
def test_a_language_server_that_hangs_costs_a_bounded_wait_and_a_classified_error(
        nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root = tmp_path / "ws"
    make_project(root)
    script = write_script(tmp_path / "script.json", [
        reply(call("hover", path="main.py", line=3, column=12)), reply(text="basedpyright is stuck")])
    # The server waits 10 s for an answer; Neovim gives up on the paused basedpyright before that and
    # says so, so the model reads the editor's reason, not the server's own timeout.
    body = BODY.replace("EDITOR_QUERIES", "true").replace("timeoutS = 90", "timeoutS = 10").replace(
        "BEFORE_RUN", PAUSE).replace("AFTER_RUN", RESUME)
    result = run_nvim(nvim, tmp_path, body, root=root, timeout=400,
                      env={"SCRIPT": str(script), "BASEDPYRIGHT": str(BASEDPYRIGHT)})

    assert result["stop"] == "final", result
    assert result["paused"] >= 2
    (hover,) = result["outputs"]
    assert hover["status"] == "error"
    assert hover["output"] == ("ERROR: the editor's language server failed on hover of main.py: basedpyright did "
                               "not answer textDocument/hover in time [failed]")


# A language server that negotiated UTF-8 (or UTF-32) counts columns differently from the
# server's UTF-16: "é" is 2 bytes and 1 UTF-16 unit, U+1D538 4 bytes and 2 units (a surrogate pair).
ENCODINGS = r"""
  local positions = require("lsp_agent.positions")
  local answers = require("lsp_agent.editor_answers")
  local line = 'x = "é𝔸" + add(1)'
  result.to_utf8 = positions.convert(line, 12, "utf-16", "utf-8")
  result.to_utf32 = positions.convert(line, 12, "utf-16", "utf-32")
  result.from_utf8 = positions.convert(line, 15, "utf-8", "utf-16")
  result.past_end = positions.convert("é", 5, "utf-16", "utf-8")
  vim.fn.writefile({ line }, env.ROOT .. "/m.py")
  local uri = vim.uri_from_fname(env.ROOT .. "/m.py")
  local found = answers.locations({ { targetUri = uri, targetSelectionRange = {
    start = { line = 0, character = 15 }, ["end"] = { line = 0, character = 18 } } } }, "utf-8", {}, {}, {})
  result.link = found[1]
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_columns_are_converted_between_position_encodings(nvim: str, tmp_path: Path) -> None:
    result = run_nvim(nvim, tmp_path, ENCODINGS, root=tmp_path)
    # 'x = "é𝔸" + add(1)': `add` starts at UTF-16 column 12, byte 15, code point 11.
    assert (result["to_utf8"], result["to_utf32"], result["from_utf8"]) == (15, 11, 12)
    assert result["past_end"] == 6  # one unit of "é" is two bytes; the excess is kept
    # A LocationLink from a UTF-8 server becomes a Location of its target's name, in UTF-16.
    assert result["link"] == {"uri": (tmp_path / "m.py").as_uri(),
                              "range": {"start": {"line": 0, "character": 12}, "end": {"line": 0, "character": 15}}}
