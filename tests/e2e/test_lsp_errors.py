"""Malformed requests get documented JSON-RPC errors, and the server keeps serving."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import Editor, StartEditor
from tests.helpers import reply


async def error_of(editor: Editor, method: str, params: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await editor.request(method, params)
    return caught.value


async def still_serves(editor: Editor) -> None:
    status = await editor.request("agent/status")
    assert status["state"] == "idle"


async def test_wrong_types_and_unknown_fields_are_invalid_params_naming_the_field(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="hi")])
    cases = [
        ("agent/run", {"prompt": 123}, "prompt"),
        ("agent/run", {"prompt": "x", "maxSteps": "5"}, "maxSteps"),
        ("agent/run", {"prompt": "x", "bogus": True}, "bogus"),
        ("agent/run", {}, "prompt"),
        ("agent/run", ["a", "list"], None),
        ("agent/session", {"sessionID": 7}, "sessionID"),
        ("agent/status", {"sessionID": None, "extra": 1}, "extra"),
        ("agent/cancel", "ses_x", None),
    ]
    for method, params, field in cases:
        error = await error_of(editor, method, params)
        assert error.code == -32602, (method, params)
        assert error.data["kind"] == "invalid_params" and error.data["status"] == 400
        assert error.data.get("field") == field, (method, params, error.data)
        if field:
            assert field in error.message
    await still_serves(editor)


async def test_unknown_method_and_huge_prompt_are_answered_and_the_next_request_works(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="hi")])
    unknown = await error_of(editor, "agent/doesNotExist", {"x": 1})
    assert unknown.code == -32601
    huge = await error_of(editor, "agent/run", {"prompt": "x" * 5_000_000})
    assert huge.code == -32602 and huge.data == {"kind": "too_large", "status": 413, "field": "prompt"}
    assert "200000" in huge.message
    await still_serves(editor)
    started = await editor.run("a normal request")
    assert (await editor.finished(started["generation"]))["stopReason"] == "final"


async def test_unknown_ids_are_not_found_and_a_busy_session_is_a_conflict(workspace: Path,
                                                                          start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="slow", delay_ms=3000)])
    for method, params in [("agent/session", {"sessionID": "ses_nope"}), ("agent/status", {"sessionID": "ses_nope"}),
                           ("agent/cancel", {"sessionID": "ses_nope"}), ("agent/run", {"prompt": "x",
                                                                                       "sessionID": "ses_nope"})]:
        error = await error_of(editor, method, params)
        assert (error.code, error.data["status"], error.data["kind"]) == (-32004, 404, "unknown_session"), method
    started = await editor.run("take your time")
    busy = await error_of(editor, "agent/run", {"prompt": "again", "sessionID": started["sessionID"]})
    assert (busy.code, busy.data) == (-32009, {"kind": "busy", "status": 409})
    page = await error_of(editor, "agent/session", {"sessionID": started["sessionID"], "after": "msg_nope"})
    assert page.data["kind"] == "unknown_message"
    await editor.request("agent/cancel", {"sessionID": started["sessionID"]})
    await editor.finished(started["generation"])


async def test_an_unusable_model_is_refused_with_the_reason(workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, init_options={"model": "scripted/none"})  # no script given
    error = await error_of(editor, "agent/run", {"prompt": "hello"})
    assert (error.code, error.data["kind"], error.data["status"]) == (-32010, "config", 503)
    assert "script" in error.message
    await still_serves(editor)
