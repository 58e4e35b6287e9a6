"""`lsp-agent schema`: the JSON Schema of every custom method, notification and command."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from lsp_agent.protocol import (
    approval_models,
    checkpoint_models,
    context_models,
    editor_query_models,
    mcp_models,
    methods,
    provider_models,
    skill_models,
    trust_models,
    verification_models,
)
from lsp_agent.protocol.schema import METHODS, build_schema


def schema_from_cli() -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "lsp_agent", "schema"], capture_output=True, text=True,
                         check=True).stdout
    parsed: dict[str, Any] = json.loads(out)
    return parsed


def test_schema_command_lists_every_method_notification_and_command() -> None:
    schema = schema_from_cli()
    assert schema == json.loads(json.dumps(build_schema()))
    assert set(schema["methods"]) == {
        *methods.CLIENT_REQUESTS, *methods.SERVER_NOTIFICATIONS, methods.AGENT_SAVE_DOCUMENTS,
        methods.COMMAND_FIX_DIAGNOSTIC, *context_models.CONTEXT_REQUESTS,
        *(doc[0] for doc in skill_models.METHOD_DOCS), mcp_models.AGENT_MCP_LIST,
        approval_models.AGENT_REQUEST_APPROVAL, editor_query_models.AGENT_EDITOR_QUERY,
        *(doc[0] for doc in trust_models.METHOD_DOCS),
        *(doc[0] for doc in provider_models.METHOD_DOCS), verification_models.METHOD_DOC[0],
            *checkpoint_models.CHECKPOINT_REQUESTS}
    kinds = {name: entry["kind"] for name, entry in schema["methods"].items()}
    assert kinds[methods.AGENT_EVENT] == "notification" and kinds[methods.AGENT_RUN] == "request"
    assert "result" not in schema["methods"][methods.AGENT_EVENT]


#: What the wire must not load: the parts of the agent and the services built on them.
PARTS = ("lsp_agent.skills", "lsp_agent.store", "lsp_agent.providers", "lsp_agent.tools", "lsp_agent.mcp",
         "lsp_agent.sandbox", "lsp_agent.disk")


def test_the_protocol_loads_no_part_of_the_agent() -> None:
    """`lsp-agent schema` describes the wire from the protocol alone: no skills service, no adapter."""
    probe = ("import sys, lsp_agent.protocol.schema\n"
             f"print(','.join(sorted(m for m in sys.modules if m.startswith({PARTS!r}))))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert "lsp_agent.skills.service" not in loaded.split(",")
    assert loaded == ""


def test_params_are_closed_and_use_wire_names() -> None:
    schema = build_schema()
    run = schema["methods"][methods.AGENT_RUN]["params"]
    assert run["additionalProperties"] is False
    assert set(run["properties"]) == {"prompt", "sessionID", "model", "maxSteps", "workDoneToken", "attachments"}
    assert run["required"] == ["prompt"] and run["properties"]["prompt"]["maxLength"] == 200_000
    status = schema["methods"][methods.AGENT_STATUS]["result"]
    assert {"state", "generation", "verification", "step", "maxSteps"} <= set(status["properties"])


def test_event_notification_documents_every_event_type() -> None:
    event = build_schema()["methods"][methods.AGENT_EVENT]["params"]
    types = {d["properties"]["type"]["const"] for d in event["$defs"].values()
             if "type" in d.get("properties", {}) and "const" in d["properties"]["type"]}
    assert {"step_start", "text_delta", "reasoning_delta", "text", "reasoning", "tool_start", "tool_use",
            "step_finish", "error", "notice", "run_finish"} <= types


def test_every_schema_is_valid_json_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = build_schema()
    for doc in METHODS:
        entry = schema["methods"][doc.name]
        jsonschema.Draft202012Validator.check_schema(entry["params"])
        if "result" in entry:
            jsonschema.Draft202012Validator.check_schema(entry["result"])
    jsonschema.Draft202012Validator.check_schema(schema["errorData"])
