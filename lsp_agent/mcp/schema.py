"""Tool schemas from MCP servers: checked as JSON Schema once, when the server lists them, then
passed through unchanged (byte-stable, so the tool list stays a cacheable prefix)."""

from __future__ import annotations

import keyword
import re
from typing import Any, ClassVar

from jsonschema import exceptions as js_errors
from jsonschema import validators
from jsonschema.protocols import Validator
from pydantic import BaseModel, ConfigDict, create_model, model_validator

from lsp_agent.core.tools import StrictArgs

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
#: Providers limit function names to 64 characters.
QUALIFIED_MAX = 64
DESCRIPTION_MAX = 2000


class SchemaProblem(ValueError):
    pass


def qualified_name(server: str, tool: str) -> str:
    if not TOOL_NAME.match(tool):
        raise SchemaProblem(f"tool name {tool!r} has characters outside [A-Za-z0-9_-]")
    name = f"mcp__{server}__{tool}"
    if len(name) > QUALIFIED_MAX:
        raise SchemaProblem(f"{name!r} is longer than {QUALIFIED_MAX} characters")
    return name


def check_schema(schema: Any) -> dict[str, Any]:
    """The tool's input schema, if it is a valid JSON Schema for an object; else SchemaProblem."""
    if not isinstance(schema, dict):
        raise SchemaProblem("the input schema is not a JSON object")
    if schema.get("type") != "object":
        raise SchemaProblem(f"the input schema's type is {schema.get('type')!r}, not 'object'")
    try:
        validators.validator_for(schema).check_schema(schema)
    except js_errors.SchemaError as exc:
        raise SchemaProblem(f"the input schema is not valid JSON Schema: {exc.message}") from None
    return schema


def _field_names(schema: dict[str, Any]) -> list[str]:
    props = schema.get("properties")
    if not isinstance(props, dict):
        return []
    reserved = set(dir(BaseModel))
    return [n for n in props if n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("_")
            and not n.startswith("model_") and n not in reserved]


def _describe(error: js_errors.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


class McpArgs(StrictArgs):
    """Arguments of an MCP tool: the tool's JSON Schema decides (extra names are the schema's call)."""

    model_config = ConfigDict(extra="allow", strict=True)
    validator: ClassVar[Validator | None] = None

    @model_validator(mode="before")
    @classmethod
    def _schema_check(cls, data: Any) -> Any:
        if cls.validator is not None:
            errors = sorted(cls.validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
            if errors:
                raise ValueError("; ".join(_describe(e) for e in errors[:5]))
        return data


def args_model_for(schema: dict[str, Any]) -> type[StrictArgs]:
    """An argument model for one tool; its identifier-named properties are declared fields so a
    rejection can list them (the controller names the allowed parameters)."""
    fields: dict[str, Any] = {name: (Any, None) for name in _field_names(schema)}
    model: type[McpArgs] = create_model("McpArgs", __base__=McpArgs, **fields)
    model.validator = validators.validator_for(schema)(schema)
    return model
