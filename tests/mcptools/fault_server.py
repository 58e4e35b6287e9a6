"""A tiny MCP server (the official SDK's low-level Server, over stdio) for the fault cases:
a slow tool, a crash mid-call, a huge result, an invalid schema, an image, an error result.

Run: python tests/mcptools/fault_server.py [--marker FILE]  (the marker records each call's name,
so a test can tell whether a call reached the server).
"""

from __future__ import annotations

import asyncio
import os
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

MARKER = sys.argv[sys.argv.index("--marker") + 1] if "--marker" in sys.argv else None
OBJ = {"type": "object", "additionalProperties": False}


def _tool(name: str, description: str, props: dict[str, object] | None = None, required: list[str] | None = None,
          read_only: bool = False, schema: dict[str, object] | None = None) -> types.Tool:
    return types.Tool(
        name=name, description=description,
        input_schema=schema if schema is not None else {**OBJ, "properties": props or {}, "required": required or []},
        annotations=types.ToolAnnotations(read_only_hint=read_only))


TOOLS = [
    _tool("slow", "Sleep for the given seconds, then answer 'woke up'.",
          {"seconds": {"type": "number", "minimum": 0}}, ["seconds"]),
    _tool("crash", "Exit the server process in the middle of the call."),
    _tool("huge", "Return a text result of the given number of characters.",
          {"chars": {"type": "integer", "minimum": 1}}, ["chars"], read_only=True),
    _tool("echo", "Echo the text back, unchanged.", {"text": {"type": "string"}}, ["text"], read_only=True),
    _tool("picture", "Return a tiny image and a resource link.", read_only=True),
    _tool("fail", "Always report an error result."),
    # Not a valid JSON Schema ("type" must be a string or list): the client must skip this tool.
    _tool("broken", "A tool whose input schema is invalid.", schema={"type": "object",
                                                                     "properties": {"x": {"type": 5}}}),
    # A name the client cannot use as a function name.
    _tool("bad.name", "A tool whose name has a dot."),
]


async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


def _text(text: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if MARKER:
        with open(MARKER, "a", encoding="utf-8") as out:
            out.write(params.name + "\n")
    if params.name == "slow":
        await anyio.sleep(float(args["seconds"]))
        return _text("woke up")
    if params.name == "crash":
        sys.stdout.flush()
        os._exit(3)
    if params.name == "huge":
        return _text("x" * int(args["chars"]))
    if params.name == "echo":
        return _text(str(args["text"]))
    if params.name == "picture":
        return types.CallToolResult(content=[
            types.TextContent(type="text", text="a picture:"),
            types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
            types.ResourceLink(type="resource_link", name="readme", uri="file:///readme.md", mime_type="text/markdown"),
        ])
    if params.name == "fail":
        return _text("the thing is broken", error=True)
    return _text(f"unknown tool {params.name}", error=True)


async def main() -> None:
    server: Server[object] = Server("fault", on_list_tools=list_tools, on_call_tool=call_tool)  # type: ignore[arg-type]
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
