"""Settings from initializationOptions and the client's `lspAgent` section; invalid values fall back."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import TIMEOUT, Editor, StartEditor
from tests.helpers import reply, wait_for


async def max_steps_of_a_run(editor: Editor) -> int:
    started = await editor.run("hi")
    await editor.finished(started["generation"])
    return next(e["event"]["maxSteps"] for e in editor.events
                if e["generation"] == started["generation"] and e["event"]["type"] == "step_start")


async def wait_messages(editor: Editor, count: int) -> None:
    # The warning comes after `initialize`, whenever the server gets to it: on a loaded machine that
    # is seconds, so wait for the message itself rather than a fixed time.
    await wait_for(lambda: len(editor.client.messages) >= count, timeout=TIMEOUT)


async def test_invalid_initialization_options_fall_back_and_are_reported_once(workspace: Path,
                                                                              start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="hi")], repeat_last=True,
                                init_options={"maxSteps": "many", "limits": {"read_lines": -5}, "bogus": 1})
    await wait_messages(editor, 1)
    (message,) = editor.client.messages
    assert message.type == types.MessageType.Warning
    for name in ("maxSteps", "limits.read_lines", "bogus"):
        assert name in message.message
    assert await max_steps_of_a_run(editor) == 40

    # The same problem again is not shown again; a valid change applies to the next run.
    for _ in range(2):
        editor.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"lspAgent": {"maxSteps": "many"}}))
    editor.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspAgent": {"maxSteps": 3}}))
    # The run seeing maxSteps 3 proves the server handled all three changes, and it sends a warning while
    # handling a change, so any second warning for the repeated bad value would be here by now.
    assert await max_steps_of_a_run(editor) == 3
    await wait_messages(editor, 2)
    assert len(editor.client.messages) == 2  # one for the new source of the bad value, once
    assert "lspAgent setting maxSteps" in editor.client.messages[1].message


async def test_a_change_notification_without_settings_pulls_the_lspagent_section(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="hi")], repeat_last=True)
    editor.client.set_configuration({"maxSteps": 7}, section="lspAgent")
    editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    for _ in range(50):
        if await max_steps_of_a_run(editor) == 7:
            break
    assert await max_steps_of_a_run(editor) == 7


async def test_per_run_model_is_used_for_that_run_only(workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="hi")], repeat_last=True)
    with pytest.raises(JsonRpcException) as caught:
        await editor.request("agent/run", {"prompt": "hi", "model": "nowhere/model-x"})
    assert caught.value.data["kind"] == "config" and "nowhere" in caught.value.message
    started = await editor.run("hi", model="scripted/other")
    assert (await editor.finished(started["generation"]))["stopReason"] == "final"
    assert await max_steps_of_a_run(editor) == 40
