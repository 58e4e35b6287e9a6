"""agent/cancel stops a running generation at once; the session stays usable."""

from __future__ import annotations

import time
from pathlib import Path

from tests.e2e.conftest import TIMEOUT, StartEditor
from tests.helpers import call, reply, wait_for


async def test_cancel_mid_run_stops_cancelled_and_the_session_goes_idle(workspace: Path,
                                                                        start_editor: StartEditor) -> None:
    (workspace / "a.txt").write_text("a\n", encoding="utf-8")
    replies = [reply(call("read_file", path="a.txt")), reply(text="never said", delay_ms=20_000)]
    editor = await start_editor(workspace, replies)
    started = await editor.run("read and wait")
    await editor.wait_for_event(lambda e: e["type"] == "step_start" and e["step"] == 2)

    began = time.monotonic()
    answer = await editor.request("agent/cancel", {"sessionID": started["sessionID"]})
    assert answer == {"cancelled": True, "generation": started["generation"]}
    finish = await editor.finished(started["generation"])
    assert time.monotonic() - began < 5
    assert (finish["stopReason"], finish["steps"]) == ("cancelled", 2)

    status = await editor.request("agent/status", {"sessionID": started["sessionID"]})
    assert status["state"] == "idle"
    again = await editor.request("agent/cancel", {"sessionID": started["sessionID"]})
    assert again == {"cancelled": False}
    (_token, reports), = editor.client.progress_reports.items()
    assert reports[-1].kind == "end" and reports[-1].message.startswith("cancelled")


async def test_cancelling_the_progress_bar_cancels_the_run(workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="slow", delay_ms=20_000)])
    started = await editor.run("wait")
    await editor.wait_for_event(lambda e: e["type"] == "step_start")
    await wait_for(lambda: bool(editor.client.progress_reports), TIMEOUT)
    (token,) = editor.client.progress_reports
    from lsprotocol import types

    editor.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    finish = await editor.finished(started["generation"])
    assert finish["stopReason"] == "cancelled"
