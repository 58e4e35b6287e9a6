"""MCP over LSP: the real server over stdio with MCP servers configured in initializationOptions;
a scripted model calls an MCP tool through the loop; agent/mcp/list shows servers, state, tools."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsp_agent.protocol.mcp_models import McpListResult
from tests.e2e.conftest import TIMEOUT, StartEditor
from tests.helpers import call, reply, wait_for
from tests.mcptools.conftest import fault_server, time_server


def _tool_uses(editor: Any, generation: str) -> list[dict[str, Any]]:
    return [e["event"]["part"] for e in editor.events
            if e["generation"] == generation and e["event"]["type"] == "tool_use"]


async def test_mcp_tool_called_through_the_loop_over_lsp_and_listed(workspace: Path,
                                                                    start_editor: StartEditor) -> None:
    replies = [reply(call("mcp__time__get_current_time", timezone="Etc/UTC")),
               reply(call("mcp__fault__crash")), reply(text="done")]
    servers = {"time": time_server(trusted=True), "fault": fault_server(),
               "off": {"command": "nothing", "enabled": False}}
    editor = await start_editor(workspace, replies,
                                init_options={"mcp": {"servers": servers}, "approvalPolicy": "never"})
    listed = McpListResult.model_validate(await editor.request("agent/mcp/list", {}))
    assert [(s.name, s.state) for s in listed.servers] == [("fault", "stopped"), ("off", "disabled"),
                                                           ("time", "stopped")]
    started = await editor.run("what time is it?")
    finish = await editor.finished(started["generation"], timeout=120)
    assert finish["stopReason"] == "final"
    first, crash = _tool_uses(editor, started["generation"])
    assert first["state"]["status"] == "completed"
    assert first["state"]["output"].startswith("OK: mcp__time__get_current_time returned 1 content block")
    assert crash["state"]["status"] == "error" and crash["state"]["errorKind"] == "tool_failure"

    listed = McpListResult.model_validate(await editor.request("agent/mcp/list", {}))
    by_name = {s.name: s for s in listed.servers}
    assert by_name["time"].state == "ready" and by_name["time"].trusted
    assert [(t.name, t.read_only) for t in by_name["time"].tools] == [
        ("mcp__time__convert_time", True), ("mcp__time__get_current_time", True)]
    assert by_name["fault"].state == "failed" and "Connection closed" in (by_name["fault"].error or "")
    assert by_name["fault"].tools == []
    status = await editor.request("agent/status", {"sessionID": started["sessionID"]})
    assert len(status["mcpUnavailable"]) == 1 and status["mcpUnavailable"][0].startswith("fault: ")
    assert listed.discovery is False
    # The dead server was shown in the editor, once.
    await wait_for(lambda: any("'fault' is unavailable" in m.message for m in editor.client.messages), TIMEOUT)
    assert sum("'fault' is unavailable" in m.message for m in editor.client.messages) == 1


async def test_agent_mcp_list_start_and_strict_params(workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="x")],
                                init_options={"mcp": {"servers": {"fault": fault_server()}},
                                              "experimental": {"mcp_tool_discovery": True}})
    # Starting a server can take long on a loaded machine: a longer wait than editor.request's.
    answer = editor.client.protocol.send_request_async("agent/mcp/list", {"start": True})
    listed = McpListResult.model_validate(await asyncio.wait_for(answer, 120))
    (fault,) = listed.servers
    assert fault.state == "ready" and listed.discovery
    assert [s.tool for s in fault.skipped] == ["bad.name", "broken"]
    assert "not valid JSON Schema" in fault.skipped[1].reason
    try:
        await editor.request("agent/mcp/list", {"start": "yes"})
    except Exception as exc:  # strict params: a JSON-RPC error that names the field
        assert "start" in str(exc)
    else:
        raise AssertionError("a non-boolean `start` was accepted")
