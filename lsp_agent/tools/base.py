"""Moved to `lsp_agent.core.tools` (the core owns what a tool is); kept so branches in flight still import."""

from lsp_agent.core.tools import (
    Access,
    ContentArg,
    FileTracker,
    PathArg,
    RelPath,
    StrictArgs,
    Tool,
    ToolContext,
    ToolResult,
    WriteText,
)

__all__ = ["Access", "ContentArg", "FileTracker", "PathArg", "RelPath", "StrictArgs", "Tool", "ToolContext",
           "ToolResult", "WriteText"]
