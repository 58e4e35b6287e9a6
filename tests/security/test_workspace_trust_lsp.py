"""A hostile repository opened in the language server (stdio, the real `lsp-agent serve`): nothing of
its gated config applies until the editor sends agent/workspaceTrust with the hash the user was shown;
the server tells the editor (agent/workspaceTrustChanged) and the user (window/showMessage) what is
ignored; a changed config is untrusted again before the next run; revoke forgets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import Editor, StartEditor, start_editor
from tests.helpers import trust_workspace, wait_for
from tests.providers.loopback import Reply, turn
from tests.security.hostile_repo import MODEL, HostileRepo, close, make_hostile_repo

TIMEOUT = 120
__all__ = ["start_editor"]  # the e2e fixture, reused here


@pytest.fixture
async def repo(tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[HostileRepo]:
    made = await make_hostile_repo(tmp_path)
    for name, value in made.env().items():
        monkeypatch.setenv(name, value)  # the server process inherits the user's keys
    yield made
    await close(made)


async def _run(editor: Editor, repo: HostileRepo) -> dict[str, Any]:
    repo.user.queue(Reply(chunks=[turn("chat", text="Done.")], chunk_delay=0))
    started = await editor.run("look around")
    return await editor.finished(started["generation"], TIMEOUT)


async def test_a_hostile_repository_in_the_editor_starts_nothing_until_trusted(
        repo: HostileRepo, start_editor: StartEditor) -> None:
    editor = await start_editor(repo.workspace, init_options={"model": MODEL})
    await wait_for(lambda: bool(editor.trust_changes), TIMEOUT)
    first = editor.trust_changes[0]
    assert first["state"] == "untrusted" and first["root"] == str(repo.workspace.resolve())
    assert first["files"] == [".lsp-agent/config.toml"] and first["hash"]
    gated = {g["setting"]: g["effect"] for g in first["gated"]}
    assert "outside the sandbox" in gated["mcp.servers.evil"] and repo.attacker.url in gated[
        "providers.openai.baseUrl"]
    await wait_for(lambda: any("ignored" in m.message and "mcp.servers.evil" in m.message
                               for m in editor.client.messages), TIMEOUT)

    finish = await _run(editor, repo)
    assert finish["stopReason"] == "final", finish
    repo.assert_nothing_started_and_no_key_sent()

    # Trusting needs the hash shown: anything else is refused, classified.
    with pytest.raises(JsonRpcException) as refused:
        await editor.request("agent/workspaceTrust", {"action": "trust", "hash": "0" * 64})
    assert refused.value.code == -32602 and refused.value.data["kind"] == "trust_changed"
    state = await editor.request("agent/workspaceTrust", {"action": "trust", "hash": first["hash"]})
    assert state["state"] == "trusted"
    await _run(editor, repo)
    repo.assert_applied()

    # The file changes (an edit, a pull, a command): untrusted again before the next run starts.
    repo.canary.unlink()
    repo.config.write_text(repo.config.read_text() + "\n# changed\n", encoding="utf-8")
    await _run(editor, repo)
    repo.assert_nothing_started_and_no_key_sent()
    assert editor.trust_changes[-1]["state"] == "changed" and editor.trust_changes[-1]["hash"] != first["hash"]

    shown = await editor.request("agent/workspaceTrust", {"action": "show"})
    assert shown["state"] == "changed"
    await editor.request("agent/workspaceTrust", {"action": "trust", "hash": shown["hash"]})
    state = await editor.request("agent/workspaceTrust", {"action": "revoke"})
    assert state["state"] == "untrusted"
    repo.canary.unlink(missing_ok=True)
    await _run(editor, repo)
    repo.assert_nothing_started_and_no_key_sent()

    # Edited while the editor is open, no run: the editor is told (and can ask) at once.
    told = len(editor.trust_changes)
    repo.config.write_text(repo.config.read_text() + "\n# edited in the editor\n", encoding="utf-8")
    await wait_for(lambda: len(editor.trust_changes) > told, TIMEOUT)
    assert editor.trust_changes[-1]["state"] == "untrusted"
    assert editor.trust_changes[-1]["hash"] not in (first["hash"], shown["hash"])


async def test_an_editor_that_distrusts_the_folder_keeps_a_stored_trust_from_applying(
        repo: HostileRepo, start_editor: StartEditor) -> None:
    # The user trusted this config earlier (another front end); now the editor opens the folder in
    # Restricted Mode: nothing of it applies in this session, and it cannot be trusted from here.
    trust_workspace(repo.workspace)
    editor = await start_editor(repo.workspace, init_options={"model": MODEL, "editorTrusted": False})
    await wait_for(lambda: bool(editor.trust_changes), TIMEOUT)
    assert editor.trust_changes[0]["state"] == "untrusted"
    await wait_for(lambda: any("Restricted Mode" in m.message for m in editor.client.messages), TIMEOUT)
    assert not any("editorTrusted" in m.message for m in editor.client.messages)  # not reported as a setting
    await _run(editor, repo)
    repo.assert_nothing_started_and_no_key_sent()
    shown = await editor.request("agent/workspaceTrust", {"action": "show"})
    with pytest.raises(JsonRpcException) as refused:
        await editor.request("agent/workspaceTrust", {"action": "trust", "hash": shown["hash"]})
    assert refused.value.code == -32602 and refused.value.data["kind"] == "editor_distrusts"
    await _run(editor, repo)
    repo.assert_nothing_started_and_no_key_sent()


async def test_an_editor_that_trusts_the_folder_applies_the_stored_trust(
        repo: HostileRepo, start_editor: StartEditor) -> None:
    trust_workspace(repo.workspace)
    editor = await start_editor(repo.workspace, init_options={"model": MODEL, "editorTrusted": True})
    await _run(editor, repo)
    repo.assert_applied()
