"""agent/compact and agent/handoff over JSON-RPC, against the real server over stdio."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from lsp_agent.protocol.context_models import CompactResult, HandoffResult
from lsp_agent.providers.scripted import ScriptedReply
from tests.e2e.conftest import StartEditor
from tests.helpers import call, reply


def _workspace(root: Path) -> None:
    for i in range(6):
        (root / f"f{i}.txt").write_text("".join(f"line {j} of file {i}: {'x' * 40}\n" for j in range(30)))


SCRIPT = [*[reply(call("read_file", path=f"f{i}.txt")) for i in range(6)], reply(text="read them all"),
          ScriptedReply(when="[lsp-agent compaction", text="Summary: six files were read."),
          ScriptedReply(when="[lsp-agent handoff]", text="Handoff: the files were read; next, report."),
          reply(text="continuing in the new session")]


async def test_compact_then_handoff_over_the_protocol(workspace: Path, start_editor: StartEditor) -> None:
    _workspace(workspace)
    editor = await start_editor(workspace, SCRIPT, init_options={"compaction": {"keep_recent_messages": 2}})
    started = await editor.run("read every file")
    await editor.finished(started["generation"])
    session_id = started["sessionID"]

    compacted = CompactResult.model_validate(await editor.request("agent/compact", {"sessionID": session_id}))
    assert compacted.status == "compacted" and compacted.seq == 1 and compacted.source == "model"
    assert compacted.tokens_after < compacted.tokens_before
    assert any(item.kind == "task" for item in compacted.repaired)  # the summary did not cite the task
    await editor.wait_for_event(lambda e: e["type"] == "notice" and e["kind"] == "context_compaction")

    handed = HandoffResult.model_validate(await editor.request("agent/handoff", {"sessionID": session_id}))
    assert handed.parent_id == session_id and handed.session_id != session_id
    finish = await editor.finished(handed.generation)
    assert finish["stopReason"] == "final"
    page = await editor.request("agent/session", {"sessionID": handed.session_id})
    texts = [part.get("text", "") for message in page["messages"] for part in message["parts"]]
    assert texts[0].startswith("[handoff note from lsp-agent") and "Handoff: the files were read" in texts[0]
    assert texts[-1] == "continuing in the new session"


async def test_unknown_session_and_bad_params_are_protocol_errors(workspace: Path,
                                                                  start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="ok")])
    with pytest.raises(JsonRpcException) as missing:
        await editor.request("agent/compact", {"sessionID": "ses_nope"})
    assert missing.value.code == -32004
    with pytest.raises(JsonRpcException) as invalid:
        await editor.request("agent/handoff", {"session": "x"})
    assert invalid.value.code == -32602
