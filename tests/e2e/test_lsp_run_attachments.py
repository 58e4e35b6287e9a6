"""agent/run with attachments over stdio: what the composer attaches (a file by path, the selection as
text) reaches the model after the prompt, exactly as a queued message's would, and the stored prompt
keeps them for a replay; an attachment the model cannot take, or a prompt that with its attachments is
too long, is refused with a classified error and nothing is started (no session, no request to the
model)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio

from lsp_agent.protocol.models import MAX_PROMPT_CHARS
from tests.e2e.conftest import StartEditor
from tests.e2e.test_lsp_steering import data, error_of, messages, text_of
from tests.providers.loopback import LoopbackServer, Reply, turn

SELECTION = "def add(a, b):\n    return a - b  # SELECTION-MARKER-7c1e\n"


@pytest_asyncio.fixture
async def model() -> AsyncIterator[LoopbackServer]:
    """An OpenAI-compatible model on loopback that records every request it is sent."""
    srv = LoopbackServer()
    await srv.start()
    srv.fallback = Reply(chunks=[turn("chat", text="done")])
    yield srv
    await srv.close()


def options(model: LoopbackServer) -> dict[str, Any]:
    return {"model": "loop/m", "providers": {"loop": {"baseUrl": model.url, "maxRetries": 0}}}


def user_contents(body: dict[str, Any]) -> list[str]:
    out = []
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            out.append(content if isinstance(content, str) else json.dumps(content))
    return out


async def test_the_model_sees_the_attached_file_and_selection_and_the_replay_keeps_them(
        workspace: Path, start_editor: StartEditor, model: LoopbackServer) -> None:
    (workspace / "calc.py").write_text(SELECTION, encoding="utf-8")
    editor = await start_editor(workspace, init_options=options(model))
    attachments = [{"type": "file", "path": "calc.py"},
                   {"type": "text", "name": "selection calc.py:1-2", "text": SELECTION}]
    started = await editor.run("fix the bug", attachments=attachments)
    finish = await editor.finished(started["generation"])
    assert finish["stopReason"] == "final"

    (request,) = [r.json() for r in model.requests]
    (sent,) = [c for c in user_contents(request) if "fix the bug" in c]
    assert sent.startswith("fix the bug")
    assert "[attachment 1: the file calc.py — read it with read_file]" in sent
    assert "[attachment 2: selection calc.py:1-2]" in sent and "SELECTION-MARKER-7c1e" in sent

    # the stored prompt is what the model read: a replay of the session shows the attachments
    (stored,) = [text_of(m) for m in await messages(editor, started["sessionID"]) if m["role"] == "user"]
    assert stored == sent


async def test_an_attachment_the_model_cannot_take_is_refused_and_nothing_starts(
        workspace: Path, start_editor: StartEditor, model: LoopbackServer) -> None:
    editor = await start_editor(workspace, init_options=options(model))
    refused = [
        [{"type": "image", "path": "shot.png"}],                        # a kind the model cannot take
        [{"path": "shot.png"}],                                         # no type
        [{"type": "file", "path": "a\nb.py"}],                          # a path that forges a header line
        [{"type": "text", "text": "x" * MAX_PROMPT_CHARS}],             # too long with the prompt
    ]
    for attachments in refused:
        error = await error_of(editor, "agent/run", {"prompt": "look", "attachments": attachments})
        assert (error.code, data(error)["kind"], data(error)["status"]) == (-32602, "attachment_refused", 400), \
            attachments
        assert "not started" in str(error.message)
    too_many = await error_of(editor, "agent/run", {"prompt": "look",
                                                    "attachments": [{"type": "file", "path": "a"}] * 33})
    assert (too_many.code, data(too_many)["field"]) == (-32602, "attachments")
    not_a_list = await error_of(editor, "agent/run", {"prompt": "look", "attachments": "a.png"})
    assert (not_a_list.code, data(not_a_list)["field"]) == (-32602, "attachments")

    # nothing was started: no session, no request to the model, no event
    assert (await editor.request("agent/sessions", {}))["sessions"] == []
    assert model.requests == [] and editor.events == []
    # and the server goes on: the same prompt without the bad attachment runs
    ok = await editor.run("look")
    assert (await editor.finished(ok["generation"]))["stopReason"] == "final"
