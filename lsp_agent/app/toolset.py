"""The default tool set, in its fixed order (tool order is part of the cached prefix)."""

from __future__ import annotations

from typing import Any

from lsp_agent.core.tool_registry import ToolRegistry
from lsp_agent.core.tools import Tool
from lsp_agent.settings.config import Settings
from lsp_agent.skills.read_skill import ReadSkill
from lsp_agent.tools.apply_patch import ApplyPatch
from lsp_agent.tools.context_recover import ContextRecover
from lsp_agent.tools.editor_query_tools import editor_query_tools
from lsp_agent.tools.list_dir import ListDir
from lsp_agent.tools.read_file import ReadFile
from lsp_agent.tools.read_recipe import ReadRecipe
from lsp_agent.tools.run_command import RunCommand
from lsp_agent.tools.search_code import SearchCode
from lsp_agent.tools.verify_project import VerifyProject
from lsp_agent.tools.write_file import WriteFile

MINIMAL = ("read_file", "apply_patch", "write_file", "verify_project")


def default_tools(settings: Settings, editor_kinds: tuple[str, ...] = ()) -> list[Tool[Any]]:
    """`editor_kinds`: the editor queries the client declared it answers (none headless)."""
    tools: list[Tool[Any]] = [ReadFile(), ListDir(), SearchCode(), ApplyPatch(), WriteFile(), RunCommand(),
                              VerifyProject()]
    if settings.tool_profile == "minimal":
        tools = [t for t in tools if t.name in MINIMAL]
    else:
        tools.append(ReadSkill())  # after the defaults: the older tools' order (cached prefix) is unchanged
    # Experimental tools come after the defaults, in a fixed order (the tool list is cached prefix).
    if settings.experimental.context_recovery:
        tools.append(ContextRecover())
    if settings.experimental.read_only_recipes:
        tools.append(ReadRecipe(ToolRegistry(list(tools))))  # children: the read tools above, never itself
    # Last: the editor's own tools, present only where a client declared them, in the kinds' fixed order.
    tools.extend(editor_query_tools(settings.editor_queries.offered(editor_kinds)))
    return tools


def default_registry(settings: Settings, editor_kinds: tuple[str, ...] = ()) -> ToolRegistry:
    return ToolRegistry(default_tools(settings, editor_kinds))
