"""An MCP server written by hand (no SDK, so nothing on its side refuses what it sends): it answers
`tools/call` of `deep` with a result nested `depth` levels deep, as raw JSON lines on stdout.

Run: python tests/mcptools/deep_server.py  (stdio, one JSON-RPC message per line)
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {"name": "deep", "description": "Return a result nested `depth` levels deep (`where`: structured or text).",
     "inputSchema": {"type": "object", "additionalProperties": False,
                     "properties": {"depth": {"type": "integer", "minimum": 1},
                                    "where": {"type": "string", "enum": ["structured", "content"]}},
                     "required": ["depth", "where"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "echo", "description": "Echo the text back.", "inputSchema": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
     "annotations": {"readOnlyHint": True}},
]


def _send(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _result(msg_id: object, result: dict[str, object]) -> None:
    _send(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}))


def _deep_call(msg_id: object, depth: int, where: str) -> None:
    nested = '{"a":' * depth + "1" + "}" * depth  # built as text: json.dumps itself would recurse
    if where == "structured":
        body = ('{"content":[{"type":"text","text":"deep"}],"structuredContent":' + nested + ',"isError":false}')
    else:  # an unknown content block type carrying the nesting
        body = '{"content":[{"type":"text","text":"x","annotations":{"extra":' + nested + '}}],"isError":false}'
    _send('{"jsonrpc":"2.0","id":' + json.dumps(msg_id) + ',"result":' + body + "}")


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, msg_id = message.get("method"), message.get("id")
        if msg_id is None:
            continue  # notifications
        if method == "initialize":
            _result(msg_id, {"protocolVersion": message["params"]["protocolVersion"],
                             "capabilities": {"tools": {}}, "serverInfo": {"name": "deep", "version": "1"}})
        elif method == "tools/list":
            _result(msg_id, {"tools": TOOLS})
        elif method == "tools/call":
            params = message["params"]
            args = params.get("arguments") or {}
            if params["name"] == "deep":
                _deep_call(msg_id, int(args["depth"]), str(args.get("where", "structured")))
            else:
                _result(msg_id, {"content": [{"type": "text", "text": str(args.get("text", ""))}], "isError": False})
        elif method == "ping":
            _result(msg_id, {})
        else:
            _send(json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "no such method"}}))


if __name__ == "__main__":
    main()
