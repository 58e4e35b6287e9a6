"""read_recipe's data: the canonical result of each child, `$ref` resolution and `select`.

Canonical results: list_dir → {paths, truncated}; search_code → {matches: [{path, line, text}],
truncated}; read_file → {kind, text, truncated}. They are parsed from the children's own
results (the same text the model would have seen), so a recipe observes exactly what the tools say.
"""

from __future__ import annotations

import re
from typing import Any

from lsp_agent.core.tools import ToolResult

_MATCH = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<text>.*)$")
_NOTE = ("[TRUNCATED]", "[NOTE]")


class RecipeError(ValueError):
    pass


def canonical(tool: str, result: ToolResult) -> dict[str, Any]:
    lines = result.output.split("\n")
    body = [line for line in lines[1:] if not line.startswith(_NOTE)]
    truncated = bool(result.metadata.get("truncated"))
    if tool == "list_dir":
        return {"paths": [line.split(" -> ", 1)[0] for line in body], "truncated": truncated}
    if tool == "search_code":
        matches = []
        for line in body:
            m = _MATCH.match(line)
            if m:
                matches.append({"path": m["path"], "line": int(m["line"]), "text": m["text"]})
        return {"matches": matches, "truncated": truncated}
    kind = "generated" if result.metadata.get("generated") else "file"
    text = lines[0].removeprefix("OK: ") if kind == "generated" else "\n".join(body)
    return {"kind": kind, "text": text, "truncated": truncated}


def walk(value: Any, path: list[Any], where: str) -> Any:
    for key in path:
        in_dict = isinstance(value, dict) and isinstance(key, str) and key in value
        in_list = (isinstance(value, list) and isinstance(key, int) and not isinstance(key, bool)
                   and -len(value) <= key < len(value))
        if in_dict or in_list:
            value = value[key]
        else:
            raise RecipeError(f"{where}: path {path!r} does not exist in that result (stopped at {key!r})")
    return value


def resolve_refs(value: Any, results: dict[str, dict[str, Any]], where: str) -> Any:
    """Replace every {"$ref": {"step", "path"}} by the value it points at in an earlier step's result."""
    if isinstance(value, dict):
        if "$ref" in value:
            ref = value["$ref"]
            if len(value) != 1 or not isinstance(ref, dict) or set(ref) - {"step", "path"} or "step" not in ref:
                raise RecipeError(f"{where}: a reference is {{\"$ref\": {{\"step\": ID, \"path\": [...]}}}}")
            step, path = ref["step"], ref.get("path", [])
            if step not in results:
                raise RecipeError(f"{where}: $ref to step {step!r}, which is not an earlier step")
            if not isinstance(path, list):
                raise RecipeError(f"{where}: $ref path must be a list of keys and indexes")
            return walk(results[step], path, where)
        return {k: resolve_refs(v, results, where) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_refs(v, results, where) for v in value]
    return value


def apply_select(value: Any, contains: str | None, limit: int | None) -> Any:
    if not isinstance(value, list):
        if contains is not None or limit is not None:
            raise RecipeError("`contains` and `limit` apply to arrays only")
        return value
    if contains is not None:
        value = [v for v in value if contains in (v if isinstance(v, str) else _flat(v))]
    return value[:limit] if limit is not None else value


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return "\n".join(_flat(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(_flat(v) for v in value)
    return str(value)
