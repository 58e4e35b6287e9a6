"""kill -9 of the server mid-generation, with queued, steered-and-applied and steered-but-pending rows:
a new server on the same workspace and state directory loses nothing, duplicates nothing, and leaves
no row stuck (a restart recovers rows whose steering owner died)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio

from lsp_agent.providers.scripted import Script
from tests.e2e.conftest import Editor
from tests.e2e.servers import Servers
from tests.e2e.test_lsp_queue import finishes, queue, user_texts
from tests.e2e.test_lsp_steering import FOREVER_MS, WINDOW_MS, record, until
from tests.helpers import call, reply


class Crash(Servers):
    """Every server on the one workspace, each with its scripted replies."""

    def __init__(self, root: Path, scripts: Path) -> None:
        super().__init__(scripts)
        self.root = root

    async def start_with(self, replies: list[Any], repeat_last: bool = False) -> Editor:
        return await self.start(self.root, Script(label="crash", replies=replies, repeat_last=repeat_last))


@pytest_asyncio.fixture
async def servers(workspace: Path, tmp_path: Path) -> AsyncIterator[Crash]:
    started = Crash(workspace, tmp_path)
    yield started
    await started.close()


def stuck(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows a dead process left half-steered: cancelled into a generation, never applied."""
    return [r for r in rows if r["status"] == "cancelled" and r.get("steeredInto") and not r.get("steeredAppliedAt")]


async def assert_exactly_once(editor: Editor, session_id: str, submitted: list[str]) -> None:
    """Every submitted text is in the history or waiting in the queue — once, never both."""
    history = await user_texts(editor, session_id)
    waiting = [r["text"] for r in await queue(editor, session_id) if r["status"] in ("queued", "paused")]
    for text in submitted:
        assert history.count(text) + waiting.count(text) == 1, (text, history, waiting)


async def test_kill_9_mid_generation_loses_and_duplicates_nothing_and_leaves_no_row_stuck(
        servers: Crash, workspace: Path, isolated_state: Path) -> None:
    (workspace / "a.txt").write_text("a\n", encoding="utf-8")
    first = await servers.start_with([reply(call("read_file", path="a.txt"), delay_ms=WINDOW_MS),
                                 reply(text="never arrives", delay_ms=FOREVER_MS)])
    await servers.warm()  # the restart's process imports while this one runs
    receipts = record(first, "agent/receipt")
    started = await first.run("first")
    sid, gen = started["sessionID"], started["generation"]

    # Step 1: a queued follow-up is steered and lands after the step's tool results.
    applied = (await first.request("agent/queue/add", {"sessionID": sid, "text": "C: applied before the crash"}))
    steer_c = await first.request("agent/queue/steer", {"taskID": applied["item"]["id"]})
    assert steer_c["receipt"]["status"] == "accepted"
    await until(lambda: any(r["receipt"]["status"] == "applied" for r in receipts))
    await first.wait_for_event(lambda e: e["type"] == "step_start" and e["step"] == 2)

    # Step 2 waits on a slow model: two follow-ups are queued, one of them steered (accepted, pending),
    # and one direct correction is pending too.
    a = (await first.request("agent/queue/add", {"sessionID": sid, "text": "A: steered, not applied"}))["item"]
    b = (await first.request("agent/queue/add", {"sessionID": sid, "text": "B: just queued"}))["item"]
    steer_a = await first.request("agent/queue/steer", {"taskID": a["id"]})
    assert steer_a["receipt"]["status"] == "accepted" and steer_a["item"]["steeredInto"] == gen
    direct = await first.request("agent/steer", {"sessionID": sid, "expectedGeneration": gen, "clientID": "d1",
                                                 "text": "direct correction"})
    assert direct["status"] == "accepted"
    assert len(stuck(await queue(first, sid))) == 1  # A, owned by the live process

    await servers.kill(first)
    assert any(isolated_state.rglob("*.db")), "the store lives in the shared state directory"

    second = await servers.start_with([reply(text="ok")], repeat_last=True)
    # The very first answer of the new server already has A back in the queue: the Agent (and its
    # Queue.recover) is built during `initialize`, before any request is served.
    rows = await queue(second, sid)
    assert stuck(rows) == []
    by_id = {r["id"]: r for r in rows}
    assert (by_id[a["id"]]["status"], by_id[a["id"]].get("steeredInto")) == ("queued", None)
    assert by_id[b["id"]]["status"] == "queued"
    assert by_id[applied["item"]["id"]]["status"] == "cancelled" and by_id[applied["item"]["id"]]["steeredAppliedAt"]
    # The direct correction was written ahead before its receipt said accepted: its generation died
    # with the server, so it comes back as a queued row (after the rows queued before it), once.
    assert [r["text"] for r in rows if r["status"] == "queued"] == [
        "A: steered, not applied", "B: just queued", "direct correction"]

    submitted = ["first", "C: applied before the crash", "A: steered, not applied", "B: just queued",
                 "direct correction"]
    await assert_exactly_once(second, sid, submitted)
    assert await user_texts(second, sid) == ["first", "C: applied before the crash"]
    # Receipts themselves are not durable (they live in server memory): the new server knows none.
    assert await second.request("agent/steering", {"sessionID": sid}) == {"generation": None, "receipts": []}
    assert (await second.request("agent/status", {"sessionID": sid}))["state"] == "idle"

    # The recovered rows run in their order: the ctrl+s rule sends the first now, the next follows.
    prefix = await second.request("agent/steerPrefix", {"sessionID": sid})
    (result,) = prefix["results"]
    assert result["item"]["id"] == a["id"] and result["reason"] == "generation_not_active" and result["started"]
    assert [f["stopReason"] for f in await finishes(second, 3)] == ["final", "final", "final"]
    await assert_exactly_once(second, sid, submitted)
    assert await user_texts(second, sid) == submitted
    final_rows = await queue(second, sid)
    assert stuck(final_rows) == [] and not [r for r in final_rows if r["status"] in ("queued", "paused")]
