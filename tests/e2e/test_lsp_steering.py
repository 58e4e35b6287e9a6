"""agent/steering, agent/steer and agent/receipt over stdio: corrections land after the step's tool
results, receipts go accepted → applied, retries are idempotent, conflicts and bad input are errors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_agent.protocol.steering import ReceiptOut, ReceiptParams, SteeringResult
from tests.e2e.conftest import TIMEOUT, Editor, StartEditor
from tests.helpers import call, reply

#: How long a scripted reply waits so the test can act on the running generation: generous, since
#: the suite may share the machine. Replies of generations the test cancels wait "forever".
WINDOW_MS = 3000
FOREVER_MS = 60_000


def record(editor: Editor, method: str) -> list[dict[str, Any]]:
    """Every `method` notification the server sends from now on, in order."""
    seen: list[dict[str, Any]] = []

    @editor.client.feature(method)  # type: ignore[untyped-decorator]
    def on_notification(ls: Any, params: Any) -> None:
        seen.append(params)

    return seen


async def until(predicate: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


async def error_of(editor: Editor, method: str, params: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await editor.request(method, params)
    return caught.value


def data(error: JsonRpcException) -> dict[str, Any]:
    assert isinstance(error.data, dict), error
    return error.data


async def messages(editor: Editor, session_id: str) -> list[dict[str, Any]]:
    page: list[dict[str, Any]] = (await editor.request("agent/session", {"sessionID": session_id}))["messages"]
    return page


def text_of(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


async def test_a_correction_is_accepted_then_applied_after_the_steps_tool_results(
        workspace: Path, start_editor: StartEditor) -> None:
    (workspace / "a.txt").write_text("a\n", encoding="utf-8")
    editor = await start_editor(workspace, [reply(call("read_file", path="a.txt"), delay_ms=WINDOW_MS),
                                            reply(text="done, b checked too")])
    receipts = record(editor, "agent/receipt")
    started = await editor.run("read a.txt")
    sid, gen = started["sessionID"], started["generation"]

    view = await editor.request("agent/steering", {"sessionID": sid})
    assert view == {"generation": gen, "receipts": []}
    SteeringResult.model_validate(view)

    answer = await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": gen, "clientID": "c-1",
                                                  "text": "  also check b.txt  "})
    assert answer == {"status": "accepted", "sessionID": sid, "generation": gen, "clientID": "c-1"}

    finish = await editor.finished(gen)
    assert (finish["stopReason"], finish["steps"]) == ("final", 2)
    await until(lambda: any(r["receipt"]["status"] == "applied" for r in receipts))
    assert [r["receipt"]["status"] for r in receipts] == ["accepted", "applied"]
    applied = ReceiptParams.model_validate(receipts[-1])
    assert applied.session_id == sid and applied.receipt.client_id == "c-1" and applied.receipt.message_id

    history = await messages(editor, sid)
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "user", "assistant"]
    correction = history[3]
    assert correction["id"] == applied.receipt.message_id and text_of(correction) == "also check b.txt"
    assert correction["generation"] == gen
    assert correction["parts"][0]["metadata"]["steer"]["clientID"] == "c-1"

    after = await editor.request("agent/steering", {"sessionID": sid})
    assert after["generation"] is None  # present as null, not omitted
    assert [ReceiptOut.model_validate(r).status.value for r in after["receipts"]] == ["applied"]

    # An identical retry gets the stored receipt; the same clientID with other text is a conflict.
    retry = await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": gen, "clientID": "c-1",
                                                 "text": "also check b.txt"})
    assert retry == receipts[-1]["receipt"]
    conflict = await error_of(editor, "agent/steer", {"sessionID": sid, "expectedGeneration": gen,
                                                      "clientID": "c-1", "text": "something else"})
    assert (conflict.code, conflict.data) == (-32009, {"kind": "steer_conflict", "status": 409})
    assert [text_of(m) for m in await messages(editor, sid)].count("also check b.txt") == 1


async def test_a_correction_sent_as_the_final_reply_arrives_buys_one_more_step(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="all done", delay_ms=WINDOW_MS), reply(text="done, with tabs")])
    started = await editor.run("format it")
    sid, gen = started["sessionID"], started["generation"]
    await editor.wait_for_event(lambda e: e["type"] == "step_start")
    answer = await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": gen, "clientID": "late",
                                                  "text": "use tabs"})
    assert answer["status"] == "accepted"
    finish = await editor.finished(gen)
    assert (finish["stopReason"], finish["steps"]) == ("final", 2)
    history = await messages(editor, sid)
    assert [(m["role"], text_of(m)) for m in history][-2:] == [("user", "use tabs"), ("assistant", "done, with tabs")]


async def test_stale_idle_and_oversized_corrections_are_rejected_receipts_not_errors(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="slow", delay_ms=WINDOW_MS), reply(text="never")])
    receipts = record(editor, "agent/receipt")
    started = await editor.run("task")
    sid, gen = started["sessionID"], started["generation"]

    stale = await editor.request("agent/steer", {"sessionID": sid, "clientID": "s1", "text": "x",
                                                 "expectedGeneration": "00000000-0000-0000-0000-000000000000"})
    assert (stale["status"], stale["reason"]) == ("rejected", "stale_generation")
    too_long = await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": gen, "clientID": "s2",
                                                    "text": "y" * 16_001})
    assert (too_long["status"], too_long["reason"]) == ("rejected", "too_long")
    longest = await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": gen, "clientID": "s3",
                                                   "text": "  " + "z" * 16_000 + "  "})
    assert longest["status"] == "accepted"  # trimmed first: exactly 16,000 characters
    await editor.finished(gen)

    idle = await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": gen, "clientID": "s4",
                                                "text": "too late"})
    assert (idle["status"], idle["reason"]) == ("rejected", "generation_not_active")
    await until(lambda: len(receipts) >= 5)
    assert [(r["receipt"]["clientID"], r["receipt"]["status"]) for r in receipts] == [
        ("s1", "rejected"), ("s2", "rejected"), ("s3", "accepted"), ("s3", "applied"), ("s4", "rejected")]
    texts = [text_of(m) for m in await messages(editor, sid)]
    assert "x" not in texts and "too late" not in texts and "z" * 16_000 in texts


async def test_bad_client_ids_and_empty_text_are_invalid_params_and_unknown_sessions_not_found(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="slow", delay_ms=FOREVER_MS)])
    started = await editor.run("task")
    sid, gen = started["sessionID"], started["generation"]
    base = {"sessionID": sid, "expectedGeneration": gen, "text": "fix"}
    for client_id in ["has space", "dots.are.out", "", "x" * 101, "ünïcode"]:
        error = await error_of(editor, "agent/steer", {**base, "clientID": client_id})
        assert (error.code, error.data) == (-32602, {"kind": "invalid_params", "status": 400, "field": "clientID"})
    ok = await editor.request("agent/steer", {**base, "clientID": "x" * 100})
    assert ok["status"] == "accepted"

    blank = await error_of(editor, "agent/steer", {**base, "clientID": "blank", "text": "   "})
    assert (blank.code, data(blank)["status"]) == (-32602, 400) and "empty" in blank.message
    missing = await error_of(editor, "agent/steer", {"sessionID": sid, "clientID": "c", "text": "fix"})
    assert (missing.code, data(missing)["field"]) == (-32602, "expectedGeneration")
    for method, params in [("agent/steer", {**base, "sessionID": "ses_nope", "clientID": "c"}),
                           ("agent/steering", {"sessionID": "ses_nope"})]:
        error = await error_of(editor, method, params)
        assert (error.code, error.data) == (-32004, {"kind": "unknown_session", "status": 404}), method

    await editor.request("agent/cancel", {"sessionID": sid})
    assert (await editor.finished(gen))["stopReason"] == "cancelled"
    view = await editor.request("agent/steering", {"sessionID": sid})
    (receipt,) = view["receipts"]
    assert (receipt["status"], receipt["reason"]) == ("rejected", "generation_ended_before_application")
