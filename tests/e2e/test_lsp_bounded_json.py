"""Tool arguments nested 100,000 levels deep, through the real server over stdio: the call is
refused with a classified error the model sees, the run finishes, the server goes on."""

from __future__ import annotations

from pathlib import Path

from lsp_agent.domain.bounded_json import MAX_DEPTH
from tests.e2e.conftest import StartEditor
from tests.helpers import call, reply

DEEP = 100_000


async def test_deep_tool_arguments_are_a_classified_error_and_the_run_finishes(workspace: Path,
                                                                               start_editor: StartEditor) -> None:
    deep = '{"path": "deep.txt", "content": ' + "[" * DEEP + "]" * DEEP + "}"
    editor = await start_editor(workspace, [reply(call("write_file", raw=deep)),
                                            reply(call("write_file", path="after.txt", content="goes on\n")),
                                            reply(text="done"), reply(text="second run")],
                                init_options={"compaction": {"context_window": 1_000_000}})
    started = await editor.run("write it")
    finish = await editor.finished(started["generation"])
    assert finish["stopReason"] == "final"
    uses = [e["event"] for e in editor.events
            if e["generation"] == started["generation"] and e["event"]["type"] == "tool_use"]
    deep_state, after_state = (u["part"]["state"] for u in uses)
    assert deep_state["errorKind"] == "invalid_json"
    assert f"nested deeper than {MAX_DEPTH} levels" in deep_state["output"]
    assert after_state["output"].startswith("OK: created after.txt") and not (workspace / "deep.txt").exists()
    # the same session takes another run
    again = await editor.run("and again", sessionID=started["sessionID"])
    assert (await editor.finished(again["generation"]))["stopReason"] == "final"
