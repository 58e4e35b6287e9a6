"""tool_search (experimental flag `mcp_tool_discovery`): find MCP tools by what they do.

It does not run them: it returns at most five matching schemas and makes those tools callable
from the next request on (appended after the tools already offered, so the prefix stays
stable). Selections are per session and derived from the history (this tool's results carry
`selected` in their metadata), at most 32.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import Field

from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.domain.history import Message
from lsp_agent.mcp.ranking import Document, rank

if TYPE_CHECKING:
    from lsp_agent.mcp.tool import McpTool

NAME = "tool_search"


class ToolSearchArgs(StrictArgs):
    query: str = Field(min_length=1, max_length=500,
                       description="What the tool should do, in a few words (e.g. 'current time in a timezone').")
    limit: int | None = Field(None, ge=1, le=5, description="Most tools to return, 1 to 5; default 5.")


def selected_names(history: list[Message], cap: int) -> list[str]:
    """The session's selection, in the order tool_search made it (first `cap` names)."""
    names: dict[str, None] = {}
    for message in history:
        for part in message.tool_results():
            if part.name == NAME and part.ok:
                for name in part.metadata.get("selected") or []:
                    if isinstance(name, str) and len(names) < cap:
                        names.setdefault(name, None)
    return list(names)


class ToolSearch(Tool[ToolSearchArgs]):
    name = NAME
    access = Access.READ
    args_model = ToolSearchArgs
    summary = (
        "Search the connected MCP servers' tools by name and description (ranked, best first). Returns at "
        "most 5 tool schemas (name, description, parameters) and makes those tools callable from your next "
        "step on; it does not run them."
    )
    use_when = "you need a capability none of the tools you have offers (an external service, a database, ...)."
    avoid_when = "a tool you already have does the job (reading, searching, editing files, running commands)."

    def __init__(self, catalog: list[McpTool], selected: list[str]) -> None:
        self.catalog = catalog
        self.selected = selected

    async def run(self, args: ToolSearchArgs, ctx: ToolContext) -> ToolResult:
        limits = ctx.settings.limits
        limit = min(args.limit or limits.tool_search_results, limits.tool_search_results)
        by_key = {t.name: t for t in self.catalog}
        docs = [Document(t.name, t.info.name, t.description) for t in self.catalog]
        hits = rank(args.query, docs, limit)
        if not hits:
            servers = sorted({t.info.server for t in self.catalog})
            where = f"the MCP servers {', '.join(servers)}" if servers else "no connected MCP server"
            return ToolResult.success(f"OK: no tool matched {args.query!r} among {len(self.catalog)} tools of "
                                      f"{where}. Try other words.", selected=[])
        room = max(limits.tool_search_selected - len(self.selected), 0)
        fresh: list[str] = []
        full: list[str] = []
        schemas: list[dict[str, Any]] = []
        for doc, _score in hits:
            tool = by_key[doc.key]
            schemas.append({"name": tool.name, "description": tool.description, "parameters": tool.input_schema})
            if tool.name in self.selected:
                continue
            if len(fresh) < room:
                fresh.append(tool.name)
            else:
                full.append(tool.name)
        head = f"OK: {len(hits)} tool{'s' if len(hits) != 1 else ''} matched {args.query!r}"
        lines = [head + "; callable from your next step on (this search did not run them)."]
        if full:
            lines.append(f"[NOTE] the session already has {limits.tool_search_selected} selected tools (the limit); "
                         f"not made callable: {', '.join(full)}.")
        lines.append(json.dumps(schemas, ensure_ascii=False, sort_keys=True))
        return ToolResult.success("\n".join(lines), selected=fresh)
