"""The follow-up queue over stdio: add/list/edit/cancel/sendNow/steer/steerPrefix, the documented
errors (400 not steerable, 404 unknown row, 409 changed row), and agent/queueChanged notifications."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException

from lsp_agent.protocol.steering import QueueChangedParams, QueueItemOut, QueueSteerResult
from tests.e2e.conftest import Editor, StartEditor
from tests.e2e.test_lsp_steering import FOREVER_MS, WINDOW_MS, data, error_of, messages, record, text_of, until
from tests.helpers import call, reply

SLOW_THEN_OK = [reply(text="working on it", delay_ms=WINDOW_MS), reply(text="ok")]
#: Step 1 runs a command that outlives the test, so the test can cancel the generation after the
#: assistant's tool call is stored: the next generation then gets the scripted "ok".
HANGS_THEN_OK = [reply(call("run_command", command=f"python -c \"import time; time.sleep({FOREVER_MS // 1000})\"")),
                 reply(text="ok")]


async def cancel_in_tool(editor: Editor, session_id: str, generation: str) -> None:
    await editor.wait_for_event(lambda e: e["type"] == "tool_start" and e["generation"] == generation)
    await editor.request("agent/cancel", {"sessionID": session_id})
    assert (await editor.finished(generation))["stopReason"] == "cancelled"


async def user_texts(editor: Editor, session_id: str) -> list[str]:
    return [text_of(m) for m in await messages(editor, session_id) if m["role"] == "user"]


async def queue(editor: Editor, session_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await editor.request("agent/queue/list", {"sessionID": session_id}))["items"]
    for item in items:
        QueueItemOut.model_validate(item)
    return items


async def finishes(editor: Editor, count: int) -> list[dict[str, Any]]:
    def done() -> list[dict[str, Any]]:
        return [e["event"] for e in editor.events if e["event"]["type"] == "run_finish"]

    await until(lambda: len(done()) >= count)
    return done()


async def test_add_list_edit_cancel_with_queue_changed_notifications(workspace: Path,
                                                                     start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, SLOW_THEN_OK, repeat_last=True)
    changes = record(editor, "agent/queueChanged")
    started = await editor.run("first")
    sid = started["sessionID"]

    second = await editor.request("agent/queue/add", {"sessionID": sid, "text": "second"})
    third = await editor.request("agent/queue/add", {"sessionID": sid, "text": "thrid"})
    assert "started" not in second and second["item"]["status"] == "queued"
    assert second["item"]["kind"] == "follow_up" and second["item"]["position"] < third["item"]["position"]
    listed = await queue(editor, sid)
    assert [(i["text"], i["status"]) for i in listed] == [("second", "queued"), ("thrid", "queued")]
    await until(lambda: len(changes) >= 2)
    last = QueueChangedParams.model_validate(changes[-1])
    assert last.session_id == sid and [i.text for i in last.items] == ["second", "thrid"]

    # Optimistic concurrency: the edit names the version it saw; a stale version is a conflict.
    # (Waits a few ms so the edit's updatedAt differs from the add's; see the report on now_ms.)
    seen = third["item"]["updatedAt"]
    await asyncio.sleep(0.01)
    edited = await editor.request("agent/queue/edit", {"taskID": third["item"]["id"], "text": "third",
                                                       "expectedUpdatedAt": seen})
    assert edited["item"]["text"] == "third" and edited["item"]["updatedAt"] > seen
    stale = await error_of(editor, "agent/queue/edit", {"taskID": third["item"]["id"], "text": "3rd",
                                                        "expectedUpdatedAt": seen})
    assert (stale.code, stale.data) == (-32009, {"kind": "conflict", "status": 409})

    cancelled = await editor.request("agent/queue/cancel", {"taskID": second["item"]["id"]})
    assert cancelled["item"]["status"] == "cancelled" and cancelled["item"]["cancelledAt"]
    again = await error_of(editor, "agent/queue/cancel", {"taskID": second["item"]["id"]})
    assert (again.code, data(again)["status"]) == (-32009, 409)
    for method in ("agent/queue/cancel", "agent/queue/steer", "agent/queue/sendNow"):
        missing = await error_of(editor, method, {"taskID": "que_nope"})
        assert (missing.code, missing.data) == (-32004, {"kind": "not_found", "status": 404}), method
    bad = await error_of(editor, "agent/queue/add", {"sessionID": sid, "text": "x", "attachments": "a.png"})
    assert (bad.code, data(bad)["field"]) == (-32602, "attachments")
    nowhere = await error_of(editor, "agent/queue/list", {"sessionID": "ses_nope"})
    assert nowhere.code == -32004

    # The generation ends `final`: the next queued row starts the next generation by itself.
    await finishes(editor, 2)
    assert await user_texts(editor, sid) == ["first", "third"]
    rows = {i["text"]: i for i in await queue(editor, sid)}
    assert rows["third"]["status"] == "sent" and rows["third"]["messageID"]
    assert rows["second"]["status"] == "cancelled" and "steeredInto" not in rows["second"]
    await until(lambda: QueueChangedParams.model_validate(changes[-1]).items[0].status.value == "sent")


async def test_queue_steer_admits_a_row_once_and_rejects_what_cannot_be_steered(
        workspace: Path, start_editor: StartEditor) -> None:
    (workspace / "a.txt").write_text("a\n", encoding="utf-8")
    editor = await start_editor(workspace, [reply(call("read_file", path="a.txt"), delay_ms=WINDOW_MS),
                                            reply(text="done")], repeat_last=True)
    receipts = record(editor, "agent/receipt")
    changes = record(editor, "agent/queueChanged")
    started = await editor.run("read a.txt")
    sid, gen = started["sessionID"], started["generation"]
    row = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "use snake_case"}))["item"]
    picture = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "see this",
                                                        "attachments": [{"path": "shot.png"}]}))["item"]
    command = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "/compact",
                                                        "kind": "command"}))["item"]

    # Two clients steer the same row at once: one wins, the other gets 409.
    outcomes = await asyncio.gather(editor.request("agent/queue/steer", {"taskID": row["id"]}),
                                    editor.request("agent/queue/steer", {"taskID": row["id"]}),
                                    return_exceptions=True)
    wins = [o for o in outcomes if isinstance(o, dict)]
    losses = [o for o in outcomes if isinstance(o, JsonRpcException)]
    assert len(wins) == 1 and len(losses) == 1 and data(losses[0])["status"] == 409
    won = QueueSteerResult.model_validate(wins[0])
    assert won.receipt is not None and won.receipt.status.value == "accepted"
    assert won.item.status.value == "cancelled" and won.item.steered_into == gen and won.item.steered_at
    assert won.item.steered_applied_at is None and "reason" not in wins[0]

    for item in (picture, command):
        refused = await error_of(editor, "agent/queue/steer", {"taskID": item["id"]})
        assert (refused.code, refused.data) == (-32602, {"kind": "not_steerable", "status": 400})
        await editor.request("agent/queue/cancel", {"taskID": item["id"]})  # not to run them afterwards
    settled = await error_of(editor, "agent/queue/steer", {"taskID": picture["id"]})
    assert (settled.code, data(settled)["status"]) == (-32602, 400)

    finish = await editor.finished(gen)
    assert (finish["stopReason"], finish["steps"]) == ("final", 2)
    await until(lambda: any(r["receipt"]["status"] == "applied" for r in receipts))
    applied = receipts[-1]["receipt"]
    steered = next(i for i in await queue(editor, sid) if i["id"] == row["id"])
    assert steered["status"] == "cancelled" and steered["steeredInto"] == gen and steered["steeredAppliedAt"]
    assert steered["messageID"] == applied["messageID"]
    history = await messages(editor, sid)
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "user", "assistant"]
    assert history[3]["id"] == steered["messageID"] and text_of(history[3]) == "use snake_case"
    assert (await user_texts(editor, sid)).count("use snake_case") == 1

    # Editors learn of the application without polling.
    def latest(item_id: str) -> dict[str, Any]:
        return next(i for i in changes[-1]["items"] if i["id"] == item_id)

    await until(lambda: "steeredAppliedAt" in latest(row["id"]))
    assert latest(row["id"])["messageID"] == applied["messageID"]


async def test_a_steered_row_whose_generation_is_cancelled_comes_back_paused(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, HANGS_THEN_OK, repeat_last=True)
    receipts = record(editor, "agent/receipt")
    changes = record(editor, "agent/queueChanged")
    started = await editor.run("first")
    sid, gen = started["sessionID"], started["generation"]
    row = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "fix it"}))["item"]
    steered = await editor.request("agent/queue/steer", {"taskID": row["id"]})
    assert steered["item"]["steeredInto"] == gen
    await cancel_in_tool(editor, sid, gen)

    await until(lambda: receipts[-1]["receipt"]["status"] == "rejected")
    assert receipts[-1]["receipt"]["reason"] == "generation_ended_before_application"
    await until(lambda: [(i["id"], i["status"]) for i in changes[-1]["items"]] == [(row["id"], "paused")])
    (back,) = await queue(editor, sid)
    assert back["status"] == "paused" and "steeredInto" not in back and "steeredAt" not in back
    assert await user_texts(editor, sid) == ["first"]


async def test_idle_steer_leaves_the_row_and_send_now_starts_it(workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, HANGS_THEN_OK, repeat_last=True)
    started = await editor.run("first")
    sid, gen = started["sessionID"], started["generation"]
    later = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "later"}))["item"]
    await cancel_in_tool(editor, sid, gen)
    (paused,) = await queue(editor, sid)
    assert paused["status"] == "paused"  # after an interrupt nothing starts by itself

    idle = await editor.request("agent/queue/steer", {"taskID": later["id"]})
    assert idle["receipt"] is None and idle["reason"] == "generation_not_active"
    assert idle["item"]["status"] == "paused" and "steeredInto" not in idle["item"]

    sent = await editor.request("agent/queue/sendNow", {"taskID": later["id"]})
    assert sent["item"]["status"] == "sent" and sent["started"]["sessionID"] == sid
    finish = await editor.finished(sent["started"]["generation"])
    assert finish["stopReason"] == "final"
    assert await user_texts(editor, sid) == ["first", "later"]

    # Adding to an idle session with nothing queued ahead starts it at once.
    now = await editor.request("agent/queue/add", {"sessionID": sid, "text": "right away"})
    assert now["item"]["status"] == "sent" and now["started"]["generation"]
    await editor.finished(now["started"]["generation"])


async def test_send_now_moves_a_row_ahead_but_waits_for_the_running_generation(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, SLOW_THEN_OK, repeat_last=True)
    started = await editor.run("first")
    sid = started["sessionID"]
    a = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "a"}))["item"]
    b = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "b"}))["item"]
    moved = await editor.request("agent/queue/sendNow", {"taskID": b["id"]})
    assert "started" not in moved and moved["item"]["status"] == "queued"
    assert moved["item"]["position"] < a["position"]
    assert [i["text"] for i in await queue(editor, sid)] == ["b", "a"]
    await finishes(editor, 3)
    assert await user_texts(editor, sid) == ["first", "b", "a"]


async def test_steer_prefix_steers_in_order_and_stops_at_the_first_barrier(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="one moment", delay_ms=WINDOW_MS), reply(text="ok")],
                                repeat_last=True)
    started = await editor.run("first")
    sid, gen = started["sessionID"], started["generation"]
    add: list[dict[str, Any]] = [{"text": "a"}, {"text": "b"}, {"text": "see", "attachments": [{"path": "x.png"}]},
                                 {"text": "c"}]
    rows = [(await editor.request("agent/queue/add", {"sessionID": sid, **p}))["item"] for p in add]

    answer = await editor.request("agent/steerPrefix", {"sessionID": sid})
    results = [QueueSteerResult.model_validate(r) for r in answer["results"]]
    assert [r.item.id for r in results] == [rows[0]["id"], rows[1]["id"]]
    assert all(r.receipt is not None and r.receipt.status.value == "accepted" for r in results)
    waiting = [(i["text"], i["status"]) for i in await queue(editor, sid) if i["status"] == "queued"]
    assert waiting == [("see", "queued"), ("c", "queued")]  # the barrier and everything after it stay
    for row in rows[2:]:
        await editor.request("agent/queue/cancel", {"taskID": row["id"]})

    finish = await editor.finished(gen)
    assert (finish["stopReason"], finish["steps"]) == ("final", 2)
    assert await user_texts(editor, sid) == ["first", "a", "b"]


async def test_steer_prefix_without_a_generation_sends_only_the_first_row(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, HANGS_THEN_OK, repeat_last=True)
    started = await editor.run("first")
    sid, gen = started["sessionID"], started["generation"]
    x = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "x"}))["item"]
    y = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "y"}))["item"]
    await cancel_in_tool(editor, sid, gen)

    answer = await editor.request("agent/steerPrefix", {"sessionID": sid})
    (only,) = answer["results"]
    assert only["item"]["id"] == x["id"] and only["receipt"] is None and only["reason"] == "generation_not_active"
    assert only["item"]["status"] == "sent" and only["started"]["sessionID"] == sid
    await editor.finished(only["started"]["generation"])
    rows = {i["id"]: i for i in await queue(editor, sid)}
    assert rows[y["id"]]["status"] == "paused"  # not promoted: that would reverse the order
    assert await user_texts(editor, sid) == ["first", "x"]


async def test_queued_attachments_reach_the_model_and_an_unsendable_row_is_failed(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, SLOW_THEN_OK, repeat_last=True)
    changes = record(editor, "agent/queueChanged")
    started = await editor.run("first")
    sid = started["sessionID"]
    note = {"type": "text", "name": "build.log", "text": "CANARY-ATTACHED-LOG"}
    attached = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "",
                                                         "attachments": [note, {"type": "file", "path": "a.py"}]}))
    image = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    unsendable = await editor.request("agent/queue/add", {"sessionID": sid, "text": "and this screenshot",
                                                          "attachments": [image]})
    await editor.request("agent/queue/add", {"sessionID": sid, "text": "after"})

    await finishes(editor, 3)  # first, the attachments, "after": the failed row starts nothing
    await until(lambda: not [i for i in changes[-1]["items"] if i["status"] == "queued"])
    assert await user_texts(editor, sid) == [
        "first",
        "[attachment 1: build.log]\nCANARY-ATTACHED-LOG\n\n[attachment 2: the file a.py — read it with read_file]",
        "after"]
    rows = {i["id"]: i for i in await queue(editor, sid)}
    sent = rows[attached["item"]["id"]]
    assert sent["status"] == "sent" and sent["attachments"] == [note, {"type": "file", "path": "a.py"}]
    prompts = [m for m in await messages(editor, sid) if m["role"] == "user"]
    assert sent["messageID"] == prompts[1]["id"]
    failed = rows[unsendable["item"]["id"]]
    assert failed["status"] == "failed" and "messageID" not in failed
    assert failed["error"] == ("not sent: attachment 1 is of type 'image'; only `text` and `file` attachments can "
                               "be sent to the model")
    assert failed["text"] == "and this screenshot" and failed["attachments"] == [image]  # kept, nothing lost
    # The front ends saw it fail: a queueChanged carried the row with its status and reason.
    shown = [i for change in changes for i in change["items"] if i["id"] == failed["id"]]
    assert shown[-1]["status"] == "failed" and shown[-1]["error"] == failed["error"]
