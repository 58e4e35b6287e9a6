"""The steering bounds are settings (`limits.steer_chars`, `steer_pending`, `steer_receipts`), seen
through the server's own methods: at the configured bound a correction or a queued row is admitted,
one past it is refused the documented way, and the rows' `steerable` follows the same number."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import StartEditor
from tests.e2e.test_lsp_queue import queue
from tests.e2e.test_lsp_steering import WINDOW_MS, data, error_of, record, until
from tests.helpers import reply

SLOW = [reply(text="slow", delay_ms=WINDOW_MS), reply(text="done")]


async def test_configured_steer_chars_is_the_longest_correction_and_steerable_row(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, SLOW, init_options={"limits": {"steer_chars": 50}})
    changes = record(editor, "agent/queueChanged")
    started = await editor.run("task")
    sid, gen = started["sessionID"], started["generation"]

    longest = await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": gen, "clientID": "c1",
                                                   "text": "  " + "a" * 50 + "  "})  # trimmed: exactly 50
    assert longest["status"] == "accepted"
    over = await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": gen, "clientID": "c2",
                                                "text": "b" * 51})
    assert (over["status"], over["reason"], over["detail"]) == ("rejected", "too_long", "51 characters; at most 50")

    fits = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "c" * 50}))["item"]
    long = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "d" * 51}))["item"]
    assert fits["steerable"] is True and "steerBlocker" not in fits
    assert long["steerable"] is False and long["steerBlocker"] == "the text is 51 characters; at most 50 can be steered"
    listed = {i["id"]: i for i in await queue(editor, sid)}
    assert (listed[fits["id"]]["steerable"], listed[long["id"]]["steerable"]) == (True, False)
    await until(lambda: any(len(c["items"]) == 2 for c in changes))  # the notification judges by the same bound
    notified = {i["id"]: i["steerable"] for i in next(c for c in changes if len(c["items"]) == 2)["items"]}
    assert notified == {fits["id"]: True, long["id"]: False}

    refused = await error_of(editor, "agent/queue/steer", {"taskID": long["id"]})
    assert (refused.code, data(refused)) == (-32602, {"kind": "not_steerable", "status": 400})
    admitted = await editor.request("agent/queue/steer", {"taskID": fits["id"]})
    assert admitted["receipt"]["status"] == "accepted"
    await editor.request("agent/queue/cancel", {"taskID": long["id"]})
    await editor.finished(gen)


async def test_the_default_steer_chars_stays_16000(workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, SLOW)
    started = await editor.run("task")
    sid, gen = started["sessionID"], started["generation"]
    row = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "e" * 16_001}))["item"]
    assert row["steerBlocker"] == "the text is 16001 characters; at most 16000 can be steered"
    await editor.request("agent/queue/cancel", {"taskID": row["id"]})
    await editor.finished(gen)


async def test_configured_steer_pending_admits_that_many_then_refuses(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, SLOW, init_options={"limits": {"steer_pending": 2}})
    started = await editor.run("task")
    sid, gen = started["sessionID"], started["generation"]
    answers = [await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": gen,
                                                    "clientID": f"p{n}", "text": f"note {n}"}) for n in range(3)]
    assert [a["status"] for a in answers] == ["accepted", "accepted", "rejected"]
    assert (answers[2]["reason"], answers[2]["detail"]) == ("too_many_pending", "2 are pending")
    await editor.finished(gen)


async def test_configured_steer_receipts_keeps_that_many_per_session(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, SLOW, init_options={"limits": {"steer_receipts": 3}})
    started = await editor.run("task")
    sid, gen = started["sessionID"], started["generation"]
    stale = "00000000-0000-0000-0000-000000000000"
    for n in range(3):
        await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": stale, "clientID": f"r{n}",
                                             "text": "x"})
    kept = (await editor.request("agent/steering", {"sessionID": sid}))["receipts"]
    assert [r["clientID"] for r in kept] == ["r0", "r1", "r2"]  # at the bound: all kept
    await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": stale, "clientID": "r3",
                                         "text": "x"})
    kept = (await editor.request("agent/steering", {"sessionID": sid}))["receipts"]
    assert [r["clientID"] for r in kept] == ["r1", "r2", "r3"]  # one past it: the oldest settled one goes
    await editor.finished(gen)
