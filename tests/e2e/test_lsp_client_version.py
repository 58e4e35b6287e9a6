"""The extension's version against the server's at `initialize`: a different release is said once, with
the fix; the same release says nothing; the key is not taken for an unknown setting."""

from __future__ import annotations

import sys
from pathlib import Path

from lsprotocol import types

from lsp_agent.server.client_version import server_version
from tests.e2e.conftest import TIMEOUT, Editor, StartEditor
from tests.helpers import reply, wait_for


async def settled(editor: Editor) -> None:
    # A finished run proves the server got past `initialized`, where the comparison is made and said.
    started = await editor.run("hi")
    await editor.finished(started["generation"])


async def test_a_client_of_another_release_is_told_the_versions_and_the_fix(workspace: Path,
                                                                         start_editor: StartEditor) -> None:
    ours = server_version()
    assert ours is not None, "the test needs lsp-agent installed as a package (pip install -e .)"
    editor = await start_editor(workspace, [reply(text="hi")], repeat_last=True,
                                init_options={"clientVersion": "99.0.0"})
    await wait_for(lambda: len(editor.client.messages) >= 1, timeout=TIMEOUT)
    (message,) = editor.client.messages
    assert message.type == types.MessageType.Warning
    assert message.message.startswith(f"lsp-agent: the extension is 99.0.0, the server at {sys.executable} is {ours}: "
                                      "update it")
    assert "let the extension manage its environment" in message.message
    await settled(editor)
    assert len(editor.client.messages) == 1  # once, and `clientVersion` is no unknown setting


async def test_the_same_release_says_nothing(workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="hi")], repeat_last=True,
                                init_options={"clientVersion": server_version()})
    await settled(editor)
    assert editor.client.messages == []


async def test_a_version_string_cannot_forge_a_second_line(workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="hi")], repeat_last=True,
                                init_options={"clientVersion": "1.0\nlsp-agent: all is well"})
    await wait_for(lambda: len(editor.client.messages) >= 1, timeout=TIMEOUT)
    text = editor.client.messages[0].message
    assert "\n" not in text and "the extension is 1.0?lsp-agent: all is well," in text
