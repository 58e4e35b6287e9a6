"""One runtime per server and integer bounds on the wire, through the real
server over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import Editor, StartEditor
from tests.helpers import reply

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


async def error_of(editor: Editor, method: str, params: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await editor.request(method, params)
    return caught.value


async def test_a_second_initialize_is_refused_and_changes_nothing(workspace: Path, tmp_path: Path,
                                                                  start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="slow", delay_ms=2500), reply(text="next")])
    started = await editor.run("take your time")
    other = tmp_path / "elsewhere"
    other.mkdir()
    params = types.InitializeParams(capabilities=types.ClientCapabilities(), process_id=None,
                                    root_uri=other.as_uri(), initialization_options={"model": "scripted/none"})
    with pytest.raises(JsonRpcException) as caught:
        await editor.client.initialize_session(params)
    assert caught.value.code == -32600  # InvalidRequest
    assert "already initialized" in caught.value.message
    status = await editor.request("agent/status", {})
    assert (status["state"], status["generation"], status["sessionID"]) == (
        "running", started["generation"], started["sessionID"])
    busy = await error_of(editor, "agent/run", {"prompt": "in parallel", "sessionID": started["sessionID"]})
    assert busy.data["kind"] == "busy"
    assert (await editor.finished(started["generation"]))["stopReason"] == "final"
    # Still the first workspace's runtime: the session goes on in it.
    again = await editor.run("and now", sessionID=started["sessionID"])
    assert (await editor.finished(again["generation"]))["stopReason"] == "final"


BOUNDS = [
    # (method, params, field, accepted at the bound)
    ("agent/queue/edit", {"taskID": "que_x", "text": "t", "expectedUpdatedAt": 1e19}, "expectedUpdatedAt"),
    ("agent/queue/edit", {"taskID": "que_x", "text": "t", "expectedUpdatedAt": 10**19}, "expectedUpdatedAt"),
    ("agent/queue/edit", {"taskID": "que_x", "text": "t", "expectedUpdatedAt": INT64_MAX + 1}, "expectedUpdatedAt"),
    ("agent/queue/edit", {"taskID": "que_x", "text": "t", "expectedUpdatedAt": -(2**63) - 1}, "expectedUpdatedAt"),
    ("agent/run", {"prompt": "x", "workDoneToken": INT32_MAX + 1}, "workDoneToken"),
    ("agent/run", {"prompt": "x", "workDoneToken": -(2**31) - 1}, "workDoneToken"),
    ("workspace/executeCommand", types.ExecuteCommandParams(command="lsp-agent.fixDiagnostic", arguments=[
        {"uri": "file:///x.py", "line": INT32_MAX + 1, "message": "m", "kind": "test"}]), "line"),
]


async def test_integers_beyond_their_wire_range_are_invalid_params(workspace: Path,
                                                                   start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="hi")], repeat_last=True)
    for method, params, field in BOUNDS:
        error = await error_of(editor, method, params)
        assert (error.code, error.data["kind"], error.data.get("field")) == (-32602, "invalid_params", field), \
            (method, params, error.message)
        assert "OverflowError" not in error.message
    # At the bound: accepted (the row does not exist, so the edit is refused as not found, not as params).
    at = await error_of(editor, "agent/queue/edit", {"taskID": "que_x", "text": "t", "expectedUpdatedAt": INT64_MAX})
    assert at.code == -32004
    started = await editor.run("token at the bound", workDoneToken=INT32_MAX)
    assert (await editor.finished(started["generation"]))["stopReason"] == "final"
    fixed = await editor.request("workspace/executeCommand", types.ExecuteCommandParams(
        command="lsp-agent.fixDiagnostic",
        arguments=[{"uri": (workspace / "x.py").as_uri(), "line": INT32_MAX, "message": "m", "kind": "test"}]))
    assert (await editor.finished(fixed["generation"]))["stopReason"] == "final"


async def test_queue_rows_carry_the_servers_steerability_verdict(workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="slow", delay_ms=2500), reply(text="next")], repeat_last=True)
    started = await editor.run("take your time")
    session = started["sessionID"]
    text = (await editor.request("agent/queue/add", {"sessionID": session, "text": "use tabs"}))["item"]
    command = (await editor.request("agent/queue/add", {"sessionID": session, "text": "/compact",
                                                        "kind": "command"}))["item"]
    assert (text["steerable"], "steerBlocker" in text) == (True, False)
    assert command["steerable"] is False and "not 'command'" in command["steerBlocker"]
    listed = {row["id"]: row for row in (await editor.request("agent/queue/list", {"sessionID": session}))["items"]}
    assert (listed[text["id"]]["steerable"], listed[command["id"]]["steerable"]) == (True, False)
    # What the verdict says is what agent/queue/steer does.
    refused = await error_of(editor, "agent/queue/steer", {"taskID": command["id"]})
    assert refused.data["kind"] == "not_steerable" and refused.message == command["steerBlocker"]
    await editor.request("agent/cancel", {"sessionID": session})
    await editor.finished(started["generation"])
