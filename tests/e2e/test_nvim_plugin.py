"""The Neovim plugin as users install it, on every Neovim found (0.7 and 0.12): loaded with plain
`packadd` from a `pack/*/opt` directory, with `set rtp+=` (what vim-plug and packer do), and with
the built-in `vim.pack.add` from a git URL where Neovim has it; each then runs `:AgentRun` without
setup() (options from vim.g.lsp_agent, the server from a configured `python`). `:checkhealth
lsp_agent` for a good setup and for broken ones; the help file's tags; the double-load guard."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import write_script
from tests.e2e.nvim_harness import NVIMS, PLUGIN, health_lines, nvim_is_recent, run_nvim
from tests.helpers import reply

PLUGIN_VERSION = re.search(r'return "([^"]+)"', (PLUGIN / "lua" / "lsp_agent" / "version.lua").read_text()).group(1)
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

RUN_WITHOUT_SETUP = r"""
  result.commands = vim.fn.exists(":AgentRun") == 2
  result.loaded_early = package.loaded["lsp_agent"] ~= nil -- the commands alone load no more than they need
  vim.g.lsp_agent = { python = env.PYTHON, init_options = { model = "scripted/test", script = env.SCRIPT } }
  vim.cmd("AgentRun hello")
  local agent = require("lsp_agent")
  wait("the run", function() return agent.last_finish ~= nil end)
  result.stop = agent.last_finish.stopReason
  result.events = vim.api.nvim_buf_get_lines(agent.events_buf, 0, -1, false)
  result.help = #vim.api.nvim_get_runtime_file("doc/lsp_agent.txt", false)
  result.health = #vim.api.nvim_get_runtime_file("lua/lsp_agent/health.lua", false)
  vim.cmd("checkhealth lsp_agent")
  result.checkhealth = vim.api.nvim_buf_get_lines(0, 0, -1, false)
"""


def _assert_loaded_and_ran(result: dict[str, object], root: Path) -> None:
    assert result["commands"] is True and result["loaded_early"] is False
    assert result["stop"] == "final", result
    assert "== hello" in result["events"] and "hi there" in result["events"]  # type: ignore[operator]
    assert result["help"] == 1 and result["health"] == 1
    found = health_lines(result["checkhealth"])  # type: ignore[arg-type]
    assert ("INFO", "options: vim.g.lsp_agent") in found and ("INFO", f"running for {root}") in found, found
    assert ("OK", "model scripted/test (from vim.g.lsp_agent init_options)") in found
    assert ("OK", f"server: {sys.executable} -m lsp_agent serve (from python)") in found


def _workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "ws"
    (root / ".lsp-agent").mkdir(parents=True)
    script = write_script(tmp_path / "script.json", [reply(text="hi there")])
    return root, {"SCRIPT": str(script), "XDG_DATA_HOME": str(tmp_path / "data")}


@pytest.mark.parametrize("nvim", NVIMS)
def test_packadd_from_a_pack_opt_directory(nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root, env = _workspace(tmp_path)
    opt = tmp_path / "site" / "pack" / "plugins" / "opt"
    opt.mkdir(parents=True)
    (opt / "lsp-agent").symlink_to(PLUGIN, target_is_directory=True)
    body = 'vim.opt.packpath:prepend(env.SITE)\nvim.cmd("packadd lsp-agent")\n' + RUN_WITHOUT_SETUP
    result = run_nvim(nvim, tmp_path, body, root=root, env={**env, "SITE": str(tmp_path / "site")}, load=[])
    _assert_loaded_and_ran(result, root)


@pytest.mark.parametrize("nvim", NVIMS)
def test_set_rtp_append_before_startup(nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root, env = _workspace(tmp_path)
    result = run_nvim(nvim, tmp_path, RUN_WITHOUT_SETUP, root=root, env=env, load=["--cmd", f"set rtp+={PLUGIN}"])
    _assert_loaded_and_ran(result, root)


@pytest.mark.parametrize("nvim", NVIMS)
def test_vim_pack_add_from_a_git_url(nvim: str, tmp_path: Path, isolated_state: Path) -> None:
    root, env = _workspace(tmp_path)
    # The plugin at the top of a repository of its own, as vim.pack (and lazy.nvim) clone one.
    source = tmp_path / "lsp-agent.nvim"
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("tags"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(source)], check=True)
    subprocess.run([*git, "-C", str(source), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(source), "commit", "-qm", "plugin"], check=True)
    body = r"""
  if vim.pack == nil then
    result.no_vim_pack = true
    return
  end
  -- --clean leaves the user's data directory out of 'packpath'; a normal start has it
  vim.opt.packpath:prepend(vim.fn.stdpath("data") .. "/site")
  vim.pack.add({ { src = env.PACK_URL, name = "lsp-agent" } }, { confirm = false, load = true })
  result.installed_at = vim.api.nvim_get_runtime_file("lua/lsp_agent/init.lua", false)[1]
""" + RUN_WITHOUT_SETUP
    result = run_nvim(nvim, tmp_path, body, root=root, env={**env, "PACK_URL": source.as_uri()}, load=[])
    if result.get("no_vim_pack"):
        pytest.skip("this Neovim has no vim.pack (0.12+)")
    assert result["installed_at"].startswith(str(tmp_path / "data")), result["installed_at"]
    _assert_loaded_and_ran(result, root)


GUARD = r"""
  result.defined = vim.fn.exists(":AgentRun") == 2
  vim.cmd("runtime! plugin/lsp_agent.lua") -- sourced again: nothing happens, no error
  result.defined_again = vim.fn.exists(":AgentRun") == 2
"""


@pytest.mark.parametrize("nvim", NVIMS)
@pytest.mark.parametrize("opted_out", [False, True])
def test_the_plugin_file_loads_once_and_can_be_opted_out_of(nvim: str, opted_out: bool, tmp_path: Path) -> None:
    load = ["--cmd", "let g:loaded_lsp_agent = 1"] if opted_out else []
    result = run_nvim(nvim, tmp_path, GUARD, root=tmp_path, load=[*load, "--cmd", f"set rtp^={PLUGIN}"])
    assert result["defined"] is (not opted_out) and result["defined_again"] is (not opted_out)
    assert result["notes"] == []


HELP = r"""
  vim.cmd("helptags " .. vim.fn.fnameescape(env.PLUGIN_COPY .. "/doc"))
  result.messages = vim.fn.execute("messages")
  vim.cmd("help lsp_agent")
  result.help_file = vim.fn.expand("%:t")
  result.help_line = vim.fn.getline(".")
  vim.cmd("help :AgentRun")
  result.command_line = vim.fn.getline(".")
  local tags = {}
  for line in io.lines(env.PLUGIN_COPY .. "/doc/tags") do table.insert(tags, (line:match("^(%S+)"))) end
  result.tags = tags
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_helptags_and_help_lsp_agent(nvim: str, tmp_path: Path) -> None:
    copy = tmp_path / "plugin"  # :helptags writes doc/tags: into a copy, not the checkout
    shutil.copytree(PLUGIN, copy, ignore=shutil.ignore_patterns("tags"))
    result = run_nvim(nvim, tmp_path, HELP, root=tmp_path, env={"PLUGIN_COPY": str(copy)},
                      load=["--cmd", f"set rtp^={copy}"])
    assert not re.search(r"\bE\d+:", result["messages"]), result["messages"]  # :helptags is clean
    assert result["help_file"] == "lsp_agent.txt" and "*lsp_agent*" in result["help_line"]
    assert "*:AgentRun*" in result["command_line"]
    commands = re.findall(r"^(?:  |M\.COMMANDS\.)(\w+) = \{",
                          (PLUGIN / "lua" / "lsp_agent" / "commands.lua").read_text(), re.M)
    assert len(commands) == 13
    for name in ["lsp_agent", "lsp_agent-health", "lsp_agent-options", "g:lsp_agent", *(f":{c}" for c in commands)]:
        assert name in result["tags"], name


CHECKHEALTH = r"""
  vim.g.lsp_agent = vim.json.decode(env.OPTIONS)
  vim.cmd("checkhealth lsp_agent")
  result.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
"""


def _fake_server(bin_dir: Path, version: str) -> Path:
    """An `lsp-agent` that answers --version with `version` and is the real server otherwise."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / "lsp-agent"
    exe.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "lsp-agent {version}"; exit 0; fi\n'
                   f'exec {sys.executable} -m lsp_agent "$@"\n', encoding="utf-8")
    exe.chmod(0o755)
    return exe


def _checkhealth(nvim: str, tmp_path: Path, *, path: str, options: str = "{}") -> list[tuple[str, str]]:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True, exist_ok=True)
    result = run_nvim(nvim, tmp_path, CHECKHEALTH, root=root,
                      env={"PATH": path, "OPTIONS": options, "XDG_CONFIG_HOME": str(tmp_path / "config")})
    return health_lines(result["health"])


@pytest.mark.parametrize("nvim", NVIMS)
def test_checkhealth_a_good_setup(nvim: str, tmp_path: Path) -> None:
    exe = _fake_server(tmp_path / "bin", PLUGIN_VERSION)
    found = _checkhealth(nvim, tmp_path, path=f"{tmp_path / 'bin'}:{SYSTEM_PATH}",
                         options='{"init_options": {"model": "scripted/test"}}')
    ok = [text for level, text in found if level == "OK"]
    assert ok[0].startswith("Neovim 0.")
    assert f"server: {exe} serve (from PATH)" in ok and f"version {PLUGIN_VERSION}" in ok
    assert "model scripted/test (from vim.g.lsp_agent init_options)" in ok
    assert [level for level, _ in found if level == "ERROR"] == [], found
    # bubblewrap: OK where it works (CI installs it), a warning with advice where it does not
    (bwrap,) = [(level, text) for level, text in found if "bwrap" in text]
    assert bwrap[0] == "OK" if shutil.which("bwrap", path=SYSTEM_PATH) else bwrap[0] == "WARNING"
    # the chat's markdown highlighting: OK where the parser loads (0.10+ ship one), else an optional warning
    (markdown,) = [(level, text) for level, text in found if text.startswith("treesitter markdown parser")]
    assert markdown[0] == ("OK" if nvim_is_recent(nvim) else "WARNING"), markdown


@pytest.mark.parametrize("nvim", NVIMS)
def test_checkhealth_a_configured_venv_python(nvim: str, tmp_path: Path) -> None:
    found = _checkhealth(nvim, tmp_path, path=SYSTEM_PATH, options=f'{{"python": "{sys.executable}"}}')
    assert ("OK", f"server: {sys.executable} -m lsp_agent serve (from python)") in found
    (version,) = [(level, text) for level, text in found if text.startswith("version")]
    assert version[0] in ("OK", "WARNING"), version  # a checkout on PYTHONPATH has no package version
    assert ("WARNING", "no model configured") in found


@pytest.mark.parametrize("nvim", NVIMS)
def test_checkhealth_without_a_server_on_path(nvim: str, tmp_path: Path) -> None:
    found = _checkhealth(nvim, tmp_path, path=SYSTEM_PATH)
    if shutil.which("lsp-agent", path=SYSTEM_PATH):
        pytest.skip("lsp-agent is installed system-wide")
    errors = [text for level, text in found if level == "ERROR"]
    assert errors == ["lsp-agent is not on PATH (install the lsp-agent package, or pass "
                      'python = "/path/to/venv/bin/python" or cmd = { ... } to setup())'], found
    assert ("WARNING", "no model configured") in found
    assert not any(text.startswith("version") for _, text in found)


@pytest.mark.parametrize("nvim", NVIMS)
def test_checkhealth_a_server_of_another_version_and_a_missing_python(nvim: str, tmp_path: Path) -> None:
    _fake_server(tmp_path / "bin", "9.9.9")
    found = _checkhealth(nvim, tmp_path, path=f"{tmp_path / 'bin'}:{SYSTEM_PATH}")
    assert ("WARNING", f"version 9.9.9; this plugin is for {PLUGIN_VERSION}") in found
    found = _checkhealth(nvim, tmp_path, path=SYSTEM_PATH, options='{"python": "/nonexistent/venv/bin/python"}')
    assert ("ERROR", 'python = "/nonexistent/venv/bin/python" is not an executable file') in found



EXITS_EARLY = r"""
  vim.g.lsp_agent = { cmd = { "/bin/sh", "-c", "exit 3" } }
  vim.cmd("AgentRun keep this prompt")
  wait("the error", function()
    for _, note in ipairs(notes) do
      if note.msg:find("^lsp%-agent:") then return true end
    end
    return false
  end)
  vim.cmd("AgentEvents") -- Neovim goes on; no server needed for this
  result.events_shown = vim.api.nvim_buf_get_name(0):find("lsp%-agent://events") ~= nil
"""


@pytest.mark.parametrize("nvim", NVIMS)
def test_a_server_that_exits_before_it_is_ready_names_the_command_not_run(nvim: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    result = run_nvim(nvim, tmp_path, EXITS_EARLY, root=root)
    # (Neovim itself also says "Client ... quit with exit code 3")
    (note,) = [n for n in result["notes"] if n["msg"].startswith("lsp-agent:")]
    assert note["level"] == 4 and note["msg"] == (
        "lsp-agent: the server exited (code 3) before it was ready; not run: :AgentRun keep this prompt "
        "(:checkhealth lsp_agent)"), note
    assert result["events_shown"] is True


@pytest.mark.parametrize("nvim", NVIMS)
def test_checkhealth_the_installed_server_on_path(nvim: str, tmp_path: Path) -> None:
    installed = Path(sys.executable).parent / "lsp-agent"  # the console script of this environment
    if not installed.exists():
        pytest.skip("lsp-agent is not installed in this environment")
    found = _checkhealth(nvim, tmp_path, path=f"{installed.parent}:{SYSTEM_PATH}")
    assert ("OK", f"server: {installed} serve (from PATH)") in found, found
    (version,) = [(level, text) for level, text in found if text.startswith("version")]
    # an editable install without package metadata says "unknown" (a warning), never an error
    assert version == ("OK", f"version {PLUGIN_VERSION}") or version[0] == "WARNING", version
    assert [text for level, text in found if level == "ERROR"] == []
