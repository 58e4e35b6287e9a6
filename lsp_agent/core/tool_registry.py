"""The tool list: fixed order (prefix caching), schemas generated from the argument models."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from lsp_agent.core.tools import Tool
from lsp_agent.domain.ports import ToolSpec


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def schema_of(tool: Tool[Any]) -> dict[str, Any]:
    passed_through = getattr(tool, "input_schema", None)  # MCP tools: the server's schema, unchanged
    if isinstance(passed_through, dict):
        return passed_through
    schema = _strip_titles(tool.args_model.model_json_schema())
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return dict(schema)


class ToolRegistry:
    def __init__(self, tools: list[Tool[Any]]) -> None:
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate tool names: {names}")
        self._tools = {t.name: t for t in tools}
        self._specs = [ToolSpec(name=t.name, description=t.description, parameters=schema_of(t)) for t in tools]
        listed = json.dumps([s.model_dump() for s in self._specs], separators=(",", ":"), ensure_ascii=False)
        #: sha256 of the tool list; it changes only when the registry does (replay records)
        self.digest = hashlib.sha256(listed.encode("utf-8")).hexdigest()

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        return list(self._specs)
