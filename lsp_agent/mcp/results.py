"""An MCP `CallToolResult` as a tool result: text kept, images and audio as a note, resource
links as a line each, bounded, first line `OK:`/`ERROR:` like every other tool."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from lsp_agent.core.tools import ToolResult
from lsp_agent.domain import bounded_json
from lsp_agent.domain.history import ErrorKind


def _block(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        size = len(block.data.rstrip("=")) * 3 // 4
        return f"[{kind} omitted: {block.mime_type}, about {size} bytes; the model gets text only]"
    if isinstance(block, types.ResourceLink):
        mime = f" ({block.mime_type})" if block.mime_type else ""
        described = f" - {block.description}" if block.description else ""
        return f"[resource link] {block.name}: {block.uri}{mime}{described}"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return f"[resource {res.uri}]\n{res.text}"
        mime = f"{res.mime_type}, " if res.mime_type else ""
        size = len(res.blob.rstrip("=")) * 3 // 4
        return f"[binary resource omitted: {res.uri} ({mime}about {size} bytes)]"
    return f"[{getattr(block, 'type', type(block).__name__)} content omitted]"


def body_of(result: types.CallToolResult) -> str:
    parts = [_block(b) for b in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, sort_keys=True, ensure_ascii=False, indent=1))
    return "\n".join(parts)


def bound(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return (text[:limit] + f"\n[TRUNCATED] the MCP result had {len(text)} characters; showed the first {limit}. "
                           "Ask the tool for less (a narrower query, a page, a limit)."), True


def to_tool_result(qualified: str, result: types.CallToolResult, limit: int) -> ToolResult:
    # What the SDK read may still nest past our bound (its own parser allows more): converting it
    # (json.dumps of structured content, later copies) would recurse that deep.
    if bounded_json.nested_deeper_than(result.model_dump(mode="python", exclude_none=True), bounded_json.MAX_DEPTH):
        return ToolResult.failure(
            ErrorKind.TOOL_FAILURE,
            f"ERROR: tool_failure: {qualified} returned a result nested deeper than {bounded_json.MAX_DEPTH} "
            "levels; it was not read. Ask the tool for less, or continue without it.", mcp=True)
    text, truncated = bound(body_of(result), limit)
    blocks = len(result.content)
    if result.is_error:
        return ToolResult.failure(ErrorKind.TOOL_FAILURE,
                                  f"ERROR: tool_failure: {qualified} reported an error:\n{text}",
                                  mcp=True, truncated=truncated)
    return ToolResult.success(f"OK: {qualified} returned {blocks} content block{'s' if blocks != 1 else ''}\n{text}",
                              mcp=True, truncated=truncated)
