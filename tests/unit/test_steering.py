"""Steering a running generation: receipts, boundaries, limits and races."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.core.agent import Agent
from lsp_agent.core.errors import AgentError
from lsp_agent.core.steering import MAX_PENDING, MAX_RECEIPTS
from lsp_agent.protocol.errors import status_of
from tests.helpers import BACKEND, RecordingSink, call, make_agent, make_env, reply, wait_for


@pytest.fixture(params=["sqlite", "memory"], autouse=True)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs against the sqlite store and the in-memory one: the rules live in the core."""
    monkeypatch.setitem(BACKEND, "store", request.param)
    return str(request.param)



def _user_texts(agent: Agent, session_id: str) -> list[str]:
    return [m.text() for m in agent.session(session_id).history if m.role.value == "user"]


async def _running(agent: Agent, prompt: str = "task") -> tuple[str, str]:
    started = agent.start(prompt)
    return started.session_id, started.generation


async def test_correction_is_applied_after_the_steps_tool_results(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    agent = make_agent(tmp_path, [reply(call("read_file", path="a.txt"), delay_ms=150), reply(text="ok")])
    sid, gen = await _running(agent)
    receipt = await agent.corrections.steer(sid, gen, "c1", "  also check b.txt  ")
    assert receipt.status.value == "accepted"
    result = await agent.wait(gen)
    assert result is not None and result.steps == 2
    applied = agent.corrections.view(sid).receipts[0]
    assert applied.status.value == "applied" and applied.message_id
    roles = [(m.role.value, m.text()) for m in agent.session(sid).history]
    assert roles[2][0] == "tool" and roles[3] == ("user", "also check b.txt")
    assert roles[3][0] == "user" and agent.session(sid).history[3].id == applied.message_id


async def test_steer_at_the_instant_of_the_final_reply_buys_exactly_one_more_step(tmp_path: Path) -> None:
    sink = RecordingSink()
    # The final reply takes a second: long beside the wait below, on a loaded machine too.
    agent = make_agent(tmp_path, [reply(text="all done", delay_ms=1000), reply(text="done, with the correction")],
                       sink)
    sid, gen = await _running(agent)
    await wait_for(lambda: "step_start" in sink.types())  # the final reply is on its way
    receipt = await agent.corrections.steer(sid, gen, "late", "use tabs")
    assert receipt.status.value == "accepted"
    result = await agent.wait(gen)
    assert result is not None and (result.stop_reason.value, result.steps) == ("final", 2)
    assert agent.corrections.view(sid).receipts[0].status.value == "applied"


async def test_idle_stale_and_ended_generations_reject(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="a", delay_ms=100), reply(text="b")])
    sid, gen = await _running(agent)
    stale = await agent.corrections.steer(sid, "00000000-0000-0000-0000-000000000000", "s1", "x")
    assert (stale.status.value, stale.reason and stale.reason.value) == ("rejected", "stale_generation")
    await agent.wait(gen)
    idle = await agent.corrections.steer(sid, gen, "s2", "x")
    assert (idle.status.value, idle.reason and idle.reason.value) == ("rejected", "generation_not_active")
    assert agent.corrections.view(sid).generation is None


async def test_identical_retry_returns_the_stored_receipt_and_other_text_conflicts(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="a", delay_ms=200), reply(text="b")])
    sid, gen = await _running(agent)
    first = await agent.corrections.steer(sid, gen, "same", "text one")
    again = await agent.corrections.steer(sid, gen, "same", "text one")
    assert again == first
    with pytest.raises(AgentError) as caught:
        await agent.corrections.steer(sid, gen, "same", "different text")
    assert status_of(caught.value) == 409
    await agent.wait(gen)
    assert _user_texts(agent, sid).count("text one") == 1


async def test_cancel_rejects_every_pending_correction(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(call("run_command", command="python -c \"import time; time.sleep(20)\"")),
                                  reply(text="never")])
    sid, gen = await _running(agent)
    await wait_for(lambda: agent.session(sid).active is not None and agent.session(sid).active.steps == 1)
    receipts = [await agent.corrections.steer(sid, gen, f"c{i}", f"fix {i}") for i in range(3)]
    assert all(r.status.value == "accepted" for r in receipts)
    agent.cancel(sid)
    result = await agent.wait(gen)
    assert result is not None and result.stop_reason.value == "cancelled"
    view = agent.corrections.view(sid)
    assert {(r.status.value, r.reason and r.reason.value) for r in view.receipts} == {
        ("rejected", "generation_ended_before_application")}
    assert not any(t.startswith("fix ") for t in _user_texts(agent, sid))


async def test_an_old_generations_correction_never_lands_in_the_next(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="one", delay_ms=100), reply(text="two", delay_ms=100)])
    sid, gen1 = await _running(agent)
    await agent.corrections.steer(sid, gen1, "old", "for generation one")
    agent.cancel(sid)
    await agent.wait(gen1)
    gen2 = agent.start("next", sid).generation
    late = await agent.corrections.steer(sid, gen1, "old2", "still for one")
    assert late.reason is not None and late.reason.value == "stale_generation"
    await agent.wait(gen2)
    texts = _user_texts(agent, sid)
    assert "for generation one" not in texts and "still for one" not in texts


async def test_the_write_rechecks_the_generation_inside_its_transaction(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="a", delay_ms=150), reply(text="b")])
    sid, gen = await _running(agent)
    await agent.corrections.steer(sid, gen, "c", "late fix")
    # Another process took the session over: the stored active generation moved on.
    agent.env.store.set_active_generation(sid, "someone-else")
    session = agent.session(sid)
    assert agent.steering.apply_pending(session, gen) is False
    receipt = agent.corrections.view(sid).receipts[0]
    assert (receipt.status.value, receipt.reason and receipt.reason.value) == ("rejected", "application_rejected")
    assert "late fix" not in _user_texts(agent, sid)
    agent.cancel(sid)
    await agent.wait(gen)


async def test_text_and_client_id_limits(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="a", delay_ms=300), reply(text="b")])
    sid, gen = await _running(agent)
    assert (await agent.corrections.steer(sid, gen, "ok16000", "x" * 16_000)).status.value == "accepted"
    too_long = await agent.corrections.steer(sid, gen, "long16001", "x" * 16_001)
    assert too_long.reason is not None and too_long.reason.value == "too_long"
    assert (await agent.corrections.steer(sid, gen, "i" * 100, "y")).status.value == "accepted"
    for bad in ["i" * 101, "", "has space", "semi;colon"]:
        with pytest.raises(AgentError) as caught:
            await agent.corrections.steer(sid, gen, bad, "y")
        assert status_of(caught.value) == 400
    with pytest.raises(AgentError):
        await agent.corrections.steer(sid, gen, "blank", "   ")
    agent.cancel(sid)
    await agent.wait(gen)


async def test_thirty_two_pending_then_the_next_is_rejected(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="a", delay_ms=300), reply(text="b")])
    sid, gen = await _running(agent)
    for i in range(MAX_PENDING):
        assert (await agent.corrections.steer(sid, gen, f"p{i}", f"t{i}")).status.value == "accepted"
    over = await agent.corrections.steer(sid, gen, "p32", "t32")
    assert over.reason is not None and over.reason.value == "too_many_pending"
    agent.cancel(sid)
    await agent.wait(gen)


async def test_receipts_are_bounded_and_the_oldest_settled_is_evicted(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="a")])
    sid = agent.start("task").session_id
    await agent.wait(agent.session(sid).active.id)  # type: ignore[union-attr]
    for i in range(MAX_RECEIPTS):
        await agent.corrections.steer(sid, "g", f"r{i}", "x")
    assert len(agent.corrections.view(sid).receipts) == MAX_RECEIPTS
    await agent.corrections.steer(sid, "g", "r256", "x")
    ids = [r.client_id for r in agent.corrections.view(sid).receipts]
    assert len(ids) == MAX_RECEIPTS and "r0" not in ids and ids[-1] == "r256"


async def test_admission_hook_can_veto_and_is_rechecked_after(tmp_path: Path) -> None:
    async def hook(session_id: str, generation: str, text: str) -> str | None:
        await asyncio.sleep(0.05)
        return "no swearing" if "darn" in text else None

    sink = RecordingSink()
    from tests.helpers import make_env

    agent = Agent(make_env(tmp_path, [reply(text="a", delay_ms=200), reply(text="b")], sink), hook)
    sid, gen = await _running(agent)
    vetoed = await agent.corrections.steer(sid, gen, "v", "darn it")
    assert vetoed.reason is not None and vetoed.reason.value == "admission_rejected" and vetoed.detail == "no swearing"
    agent.cancel(sid)
    racing = asyncio.ensure_future(agent.corrections.steer(sid, gen, "r", "fine text"))
    result = await racing
    assert result.status.value == "rejected"
    await agent.wait(gen)
    assert [e.receipt["status"] for e in sink.of("receipt")][-1] == "rejected"


# --- write-ahead corrections (crash safety) ----------------------------------------------------------


def _die(store: Any) -> None:
    """The process that accepted the pending corrections is gone."""
    if hasattr(store, "db"):
        store.db.execute("UPDATE corrections SET owner='pid:999999999'")
    else:
        for c in store.pending_corrections():
            store.drop_correction(c.session_id, c.client_id)
            store.save_correction(dataclasses.replace(c, owner="pid:999999999"))


async def test_an_accepted_correction_is_on_disk_before_the_receipt_and_gone_once_applied(
        tmp_path: Path, backend: str) -> None:
    agent = make_agent(tmp_path, [reply(text="a", delay_ms=200), reply(text="b")])
    sid, gen = await _running(agent)
    receipt = await agent.corrections.steer(sid, gen, "c1", "use tabs")
    assert receipt.status.value == "accepted"
    store = agent.env.store
    if backend == "sqlite":  # another connection sees it: it is committed, not just in memory
        from lsp_agent.store.db import Store

        other = Store(store.path)
        assert [(c.client_id, c.text, c.generation) for c in other.pending_corrections()] == [("c1", "use tabs", gen)]
        other.close()
    assert [c.client_id for c in store.pending_corrections()] == ["c1"]
    await agent.wait(gen)
    assert store.pending_corrections() == []
    assert _user_texts(agent, sid).count("use tabs") == 1


async def test_a_rejected_or_ended_correction_leaves_nothing_pending(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="a", delay_ms=300)])
    sid, gen = await _running(agent)
    await agent.corrections.steer(sid, gen, "c1", "too late")
    agent.cancel(sid)
    await agent.wait(gen)
    assert agent.env.store.pending_corrections() == []


async def test_after_a_crash_a_pending_correction_becomes_a_queued_row_once(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="a", delay_ms=300)])
    sid, gen = await _running(agent)
    await agent.corrections.steer(sid, gen, "c1", "remember me")
    store = agent.env.store
    _die(store)
    agent.tasks[gen].cancel()  # the old process stops dead: nothing settles the correction
    restarted = Agent(dataclasses.replace(agent.env, steering=None))
    rows = restarted.follow_ups.items(sid)
    assert [(r.text, r.status.value) for r in rows] == [("remember me", "queued")]
    assert store.pending_corrections() == []
    assert "remember me" not in [m.text() for m in store.messages(sid)]
    again = Agent(dataclasses.replace(agent.env, steering=None))  # a second restart surfaces nothing new
    assert [r.text for r in again.follow_ups.items(sid)] == ["remember me"]


async def test_after_a_crash_a_steered_rows_correction_puts_the_row_back(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="a", delay_ms=300)])
    sid = agent.start("task").session_id
    item, _ = agent.follow_ups.add(sid, "from the queue")
    result = await agent.follow_ups.steer(item.id)
    assert result.receipt is not None and result.receipt.status.value == "accepted"
    store = agent.env.store
    _die(store)
    if hasattr(store, "db"):
        store.db.execute("UPDATE queue SET steer_owner='pid:999999999'")
    else:
        store.set_steer_owner(item.id, "pid:999999999")
    agent.tasks[result.receipt.generation or ""].cancel()
    restarted = Agent(dataclasses.replace(agent.env, steering=None))
    rows = restarted.follow_ups.items(sid)
    assert [(r.id, r.text, r.status.value) for r in rows] == [(item.id, "from the queue", "queued")]
    assert store.pending_corrections() == []


def test_a_live_processes_corrections_are_not_taken_over(tmp_path: Path) -> None:
    from lsp_agent.core.queue import process_owner
    from lsp_agent.core.storage import PendingCorrection

    env = make_env(tmp_path, [])
    env.store.create_session("ses_x", str(tmp_path), "m")
    env.store.save_correction(PendingCorrection("ses_x", "c1", "gen", "mine", None, process_owner(), 1))
    agent = Agent(env)
    assert agent.follow_ups.items("ses_x") == [] and len(env.store.pending_corrections()) == 1


async def test_a_clientid_whose_correction_is_still_stored_is_a_conflict_and_the_stored_one_stays(
        tmp_path: Path) -> None:
    """The receipts live in memory, the corrections on disk: a correction left pending by an earlier
    receipt table (a restart whose recovery left it to its living owner) keeps its clientID — a steer
    reusing it is a classified 409, not a database error, and the stored correction is unchanged."""
    from lsp_agent.core.queue import process_owner
    from lsp_agent.core.storage import PendingCorrection

    agent = make_agent(tmp_path, [reply(text="ok", delay_ms=300)])
    sid, gen = await _running(agent)
    earlier = PendingCorrection(sid, "c1", gen, "the earlier one", None, process_owner(), 1)
    agent.env.store.save_correction(earlier)
    with pytest.raises(AgentError) as caught:
        await agent.corrections.steer(sid, gen, "c1", "a new one")
    assert status_of(caught.value) == 409 and "still pending" in str(caught.value)
    assert agent.env.store.pending_corrections() == [earlier]
    assert agent.corrections.view(sid).receipts == []
    assert (await agent.corrections.steer(sid, gen, "c2", "a new one")).status.value == "accepted"
    await agent.wait(gen)
