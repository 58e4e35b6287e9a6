"""A hostile repository opened in Neovim with the plugin, before any trust is given:

- it ships its own `lsp-agent` (and `bwrap`) and the user's PATH has an empty or relative entry
  (".", "", "bin": the current directory, i.e. the repository): neither `:checkhealth lsp_agent`
  nor the first `:AgentRun` (which starts the server) runs it; the server is looked up in absolute
  PATH entries only, and here there is none, which the health check says;
- its `.lsp-agent/config.toml` (read by `:checkhealth` to say which model it names) is a FIFO (an
  open that never returns), a symlink to a secret file outside it, or a model name with terminal
  escapes: the check finishes, reads nothing through the link, and writes the escapes out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.nvim_harness import NVIMS, health_lines, run_nvim

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

HEALTH_THEN_RUN = r"""
  vim.cmd("checkhealth lsp_agent")
  result.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd("AgentRun hello")
  vim.cmd("AgentEvents")
  result.canary = vim.loop.fs_stat(env.CANARY) ~= nil
"""


def _planted(directory: Path, name: str, canary: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / name
    exe.write_text(f"#!/bin/sh\necho pwned >> {canary}\nexit 1\n", encoding="utf-8")
    exe.chmod(0o755)


@pytest.mark.parametrize("nvim", NVIMS)
@pytest.mark.parametrize("entry", [".", "", "bin"])
def test_a_program_the_repository_ships_is_not_run_through_a_relative_path_entry(
        nvim: str, entry: str, tmp_path: Path, isolated_state: Path) -> None:
    if any(Path(d, "lsp-agent").exists() for d in SYSTEM_PATH.split(":")):
        pytest.skip("lsp-agent is installed system-wide")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    canary = tmp_path / "outside" / "canary"
    canary.parent.mkdir()
    planted_in = repo / "bin" if entry == "bin" else repo
    _planted(planted_in, "lsp-agent", canary)
    _planted(planted_in, "bwrap", canary)
    result = run_nvim(nvim, tmp_path, HEALTH_THEN_RUN, root=repo, cwd=repo,
                      env={"PATH": f"{entry}:{SYSTEM_PATH}", "CANARY": str(canary)})
    assert result["canary"] is False and not canary.exists()
    found = health_lines(result["health"])
    errors = [text for level, text in found if level == "ERROR"]
    assert len(errors) == 1 and errors[0].startswith("lsp-agent is not on PATH"), found
    said = [note["msg"] for note in result["notes"]]
    assert any(msg.startswith("lsp-agent: not started: lsp-agent is not on PATH") for msg in said), said


CHECKHEALTH = r"""
  vim.cmd("checkhealth lsp_agent")
  result.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
"""


def _checkhealth(nvim: str, tmp_path: Path, repo: Path) -> list[str]:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "PATH": SYSTEM_PATH}
    # A FIFO would hold Neovim forever: the bound fails the test instead (generous: a loaded machine).
    result = run_nvim(nvim, tmp_path, CHECKHEALTH, root=repo, cwd=repo, env=env, timeout=90)
    lines: list[str] = result["health"]
    return lines


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".lsp-agent").mkdir(parents=True)
    (repo / ".git").mkdir()
    return repo


@pytest.mark.parametrize("nvim", NVIMS)
def test_a_fifo_as_the_workspace_config_does_not_hang_the_health_check(nvim: str, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    os.mkfifo(repo / ".lsp-agent" / "config.toml")
    found = health_lines(_checkhealth(nvim, tmp_path, repo))
    config = str(repo / ".lsp-agent" / "config.toml")
    assert ("WARNING", f"the workspace's {config} is not read: not a regular file") in found, found


@pytest.mark.parametrize("nvim", NVIMS)
def test_a_symlinked_workspace_config_is_not_followed(nvim: str, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    secret = tmp_path / "outside" / "secret.toml"
    secret.parent.mkdir()
    secret.write_text('model = "CANARY-SECRET-7f3a"\n', encoding="utf-8")
    (repo / ".lsp-agent" / "config.toml").symlink_to(secret)
    lines = _checkhealth(nvim, tmp_path, repo)
    assert not any("CANARY-SECRET" in line for line in lines), lines
    config = str(repo / ".lsp-agent" / "config.toml")
    assert any(level == "WARNING" and text.startswith(f"the workspace's {config} is not read: ")
               for level, text in health_lines(lines)), lines


@pytest.mark.parametrize("nvim", NVIMS)
def test_escapes_in_the_workspace_model_name_are_written_out(nvim: str, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / ".lsp-agent" / "config.toml").write_text('model = "x\x1b]52;c;cHduZWQ=\x07\x1b[2J"\n', encoding="utf-8")
    lines = _checkhealth(nvim, tmp_path, repo)
    assert not any("\x1b" in line or "\x07" in line for line in lines), lines
    (named,) = [text for level, text in health_lines(lines) if "names model" in text]
    assert "names model x\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J: it applies only once you trust" in named, named
