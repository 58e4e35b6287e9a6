"""A whole editor session: read an unsaved buffer, edit it, save it, verify — over stdio."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsp_agent.protocol.models import SessionResult, SessionsResult, StatusResult
from tests.e2e.conftest import PY, StartEditor, full_capabilities
from tests.helpers import call, reply, verify_config

CALC = "def add(a, b):\n    return a - b\n"
CHECK = """import pathlib, sys
text = pathlib.Path("calc.py").read_text()
ns = {}
exec(text, ns)
got = ns["add"](2, 3)
if got == 5:
    print("Success: no issues found in 1 source file")
    sys.exit(0)
line = next(i for i, l in enumerate(text.splitlines(), 1) if "return" in l)
print(f"calc.py:{line}: error: add(2, 3) returned {got}, expected 5  [misc]")
print("Found 1 error in 1 file (checked 1 source file)")
sys.exit(1)
"""


def make_calc_workspace(root: Path) -> None:
    (root / "calc.py").write_text(CALC, encoding="utf-8")
    (root / "check.py").write_text(CHECK, encoding="utf-8")
    verify_config(root, [PY, "check.py"], kind="typecheck", parser="mypy")


FIX = [
    reply(call("read_file", path="calc.py"), text="Let me look."),
    reply(call("verify_project")),
    reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n")),
    reply(call("verify_project")),
    reply(text="Fixed: add() adds now."),
]


async def test_unsaved_buffer_is_read_edited_saved_and_verified(workspace: Path, start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, FIX)
    uri = editor.open("calc.py")
    editor.type("calc.py", 1, 0, "    # unsaved note\n")  # incremental change → version 2, disk untouched

    started = await editor.run("make add() add")
    finish = await editor.finished(started["generation"])

    assert (finish["stopReason"], finish["verification"]) == ("final", "verified")
    events = [e["event"] for e in editor.events if e["generation"] == started["generation"]]
    read = next(e for e in events if e["type"] == "tool_use" and e["part"]["tool"] == "read_file")
    assert "# unsaved note" in read["part"]["state"]["output"]

    # The edit went to the buffer: versioned, with the plan's range — not a whole-file replacement.
    assert len(editor.applied) == 1
    (change,) = editor.applied[0]["edit"]["documentChanges"]
    assert change["textDocument"] == {"uri": uri, "version": 2}
    (edit,) = change["edits"]
    assert edit["range"]["start"]["line"] == 2 and edit["range"]["end"]["line"] <= 3
    assert "a + b" in edit["newText"] and "def add" not in edit["newText"]

    # Saved through agent/saveDocuments before the second check; disk equals the buffer.
    assert editor.save_requests == [[uri]]
    expected = "def add(a, b):\n    # unsaved note\n    return a + b\n"
    assert editor.text("calc.py") == expected
    assert (workspace / "calc.py").read_text(encoding="utf-8") == expected

    # Diagnostics: published on the failure, cleared by the passing check.
    published = [d for u, d in editor.diagnostics if u == uri]
    assert published[0] and published[-1] == []
    (diagnostic,) = published[0]
    assert (diagnostic["source"], diagnostic["code"], diagnostic["severity"]) == ("lsp-agent", "typecheck", 1)
    assert diagnostic["range"]["start"]["line"] == 1 and "expected 5" in diagnostic["message"]
    assert diagnostic["relatedInformation"][0]["location"]["uri"] == uri


async def test_events_arrive_in_order_with_progress_from_begin_to_end(workspace: Path,
                                                                      start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, FIX)
    editor.open("calc.py")
    started = await editor.run("make add() add")
    await editor.finished(started["generation"])

    events = [e["event"] for e in editor.events if e["generation"] == started["generation"]]
    assert all(e["sessionID"] == started["sessionID"] for e in editor.events)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "step_start" and kinds[-1] == "run_finish" and kinds.count("run_finish") == 1
    steps = [e["step"] for e in events if e["type"] == "step_start"]
    assert steps == [1, 2, 3, 4, 5]
    for use in (e for e in events if e["type"] == "tool_use"):
        start = next(i for i, e in enumerate(events)
                     if e["type"] == "tool_start" and e["part"]["callID"] == use["part"]["callID"])
        assert start < events.index(use)
    # Deltas of a part come before its final text, and add up to it.
    texts = [e for e in events if e["type"] == "text"]
    for text in texts:
        deltas = [e["delta"] for e in events if e["type"] == "text_delta" and e["partID"] == text["part"]["id"]]
        assert "".join(deltas) == text["part"]["text"]
        assert max(i for i, e in enumerate(events) if e.get("partID") == text["part"]["id"]) < events.index(text)

    # $/progress travels beside agent/event: its end may land just after run_finish.
    for _ in range(200):
        if any(r and r[-1].kind == "end" for r in editor.client.progress_reports.values()):
            break
        await asyncio.sleep(0.01)
    (_token, reports), = editor.client.progress_reports.items()
    assert reports[0].kind == "begin" and reports[0].title == "lsp-agent" and reports[0].message == "step 1 of 40"
    assert any(r.kind == "report" and r.message == "step 3 of 40 · apply_patch" for r in reports)
    assert reports[-1].kind == "end" and reports[-1].message == "final · verification verified"


async def test_status_sessions_and_paged_session_after_a_run(workspace: Path, start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, FIX)
    editor.open("calc.py")
    started = await editor.run("make add() add")
    await editor.finished(started["generation"])

    status = StatusResult.model_validate(await editor.request("agent/status", {"sessionID": started["sessionID"]}))
    assert (status.state, status.verification.value, status.generation) == ("idle", "verified", None)

    listed = SessionsResult.model_validate(await editor.request("agent/sessions"))
    assert [s.session_id for s in listed.sessions] == [started["sessionID"]]
    assert listed.sessions[0].title == "make add() add" and listed.sessions[0].state == "idle"

    # The editor's save has reached the watcher and counted as the agent's own write: a marker written
    # after it has been judged, and it is the only change reported outside the agent. (Its note is one
    # more message, the last; the marker makes the standing check not_run, so status was read before.)
    assert await editor.outside_changes_after_a_marker(started["sessionID"]) == []

    pages: list[SessionResult] = []
    after = None
    while True:
        params = {"sessionID": started["sessionID"], "limit": 3, **({"after": after} if after else {})}
        page = SessionResult.model_validate(await editor.request("agent/session", params))
        pages.append(page)
        after = page.next
        if after is None:
            break
    messages = [m for p in pages for m in p.messages]
    marker_note = messages.pop()
    assert marker_note.role == "user" and all(p.type == "text" and p.synthetic and "watcher-marker-" in p.text
                                              for p in marker_note.parts)
    # user + 5 assistant + 4 tool messages + the stale note after the agent edited a file it had read
    assert len(pages) == 4 and len(messages) == 11
    assert messages[0].role == "user" and messages[0].parts[0].type == "text"
    kinds = {p.type for m in messages for p in m.parts}
    assert {"text", "tool_call", "tool_result"} <= kinds
    results = [p for m in messages for p in m.parts if p.type == "tool_result"]
    assert results[-1].metadata is not None and results[-1].metadata["envelope"]["status"] == "passed"


async def test_a_client_supplied_progress_token_carries_the_progress(workspace: Path,
                                                                     start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="hi")], capabilities=full_capabilities(progress=False))
    editor.client.progress_reports["tok-1"] = []  # created by the client itself
    started = await editor.run("hello", workDoneToken="tok-1")
    await editor.finished(started["generation"])
    for _ in range(50):
        if editor.client.progress_reports["tok-1"] and editor.client.progress_reports["tok-1"][-1].kind == "end":
            break
        await asyncio.sleep(0.02)
    kinds = [r.kind for r in editor.client.progress_reports["tok-1"]]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert list(editor.client.progress_reports) == ["tok-1"]  # no server-created token
