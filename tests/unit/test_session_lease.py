"""Process identities and the session lease rules, in process (the real processes are in
tests/reliability/test_session_owner.py and test_same_pid_restart.py). The lease rules run against
the sqlite store and the in-memory one: they live in the core, the stores only keep the rows."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.core import process_identity
from lsp_agent.core.errors import AgentError, AgentErrorKind
from lsp_agent.core.lease import SessionLeases
from lsp_agent.core.process_identity import ProcessIdentity, Verdict, current, process_owner, start_time, verdict
from lsp_agent.core.session import AgentSession
from lsp_agent.core.storage import StoreReason, StoreUnavailable
from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.protocol.errors import from_core
from lsp_agent.store.db import Store
from lsp_agent.store.memory import MemoryStore
from tests.helpers import make_env, reply


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    found = Store(tmp_path / "s.db") if request.param == "sqlite" else MemoryStore()
    found.create_session("ses_x", str(tmp_path), "m")
    return found


def other(**changes: Any) -> str:
    return dataclasses.replace(current(), **changes).token()


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# --- identities -------------------------------------------------------------------------------------


def test_an_identity_names_host_boot_namespace_pid_start_and_a_nonce() -> None:
    me = current()
    assert me.pid == os.getpid() and me.host and me.nonce
    assert me.boot == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert me.pidns == os.readlink("/proc/self/ns/pid") and me.start == start_time(os.getpid())
    assert ProcessIdentity.parse(me.token()) == me and process_owner() == me.token()


def test_verdicts() -> None:
    parent = os.getppid()
    assert verdict(process_owner()) is Verdict.ALIVE
    # our pid, namespace and even start time, but another nonce: an earlier process (pid 1 restarted)
    assert verdict(other(nonce="0" * 16)) is Verdict.DEAD
    assert verdict(other(pid=parent, start=start_time(parent), nonce="x")) is Verdict.ALIVE
    assert verdict(other(pid=parent, start=(start_time(parent) or 0) + 1)) is Verdict.DEAD  # the pid was reused
    assert verdict(other(pid=2**22 + 12345, start=1)) is Verdict.DEAD  # no such process
    assert verdict(other(pid=parent, start=None)) is Verdict.ALIVE  # written without /proc: the pid decides
    # a process this one cannot look at
    assert verdict(other(pidns="pid:[1]", pid=1)) is Verdict.UNKNOWN
    assert verdict(other(host="elsewhere")) is Verdict.UNKNOWN
    assert verdict(other(boot="another-boot")) is Verdict.UNKNOWN
    # rows of earlier versions: `pid:N`; our own pid there is an earlier process's
    assert verdict(f"pid:{os.getpid()}") is Verdict.DEAD
    assert verdict(f"pid:{parent}") is Verdict.ALIVE
    assert verdict("pid:999999999") is Verdict.DEAD
    for garbage in (None, "", "proc:{", "proc:{}", "pid:x", "someone"):
        assert verdict(garbage) is Verdict.DEAD, garbage


def test_a_forked_child_gets_an_identity_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    mine = current()
    process_identity._forget()  # what the fork hook runs in the child
    monkeypatch.setattr(process_identity.os, "getpid", lambda: mine.pid + 1)
    child = current()
    assert child.pid == mine.pid + 1 and child.nonce != mine.nonce
    monkeypatch.undo()
    process_identity._current = mine


# --- the lease --------------------------------------------------------------------------------------


def test_take_refuse_and_release(store: Any) -> None:
    leases = SessionLeases(store)
    assert leases.take("ses_x") is True  # taken by this call: give it back when done
    assert leases.take("ses_x") is False  # already ours: nothing to give back
    store.release_lease("ses_x", other(host="elsewhere"))  # only the holder releases
    assert store.lease("ses_x").owner == process_owner()
    leases.release("ses_x")
    assert store.lease("ses_x") is None


def test_a_live_holder_refuses_with_session_busy_naming_it(store: Any) -> None:
    parent = os.getppid()
    holder = other(pid=parent, start=start_time(parent), nonce="n")
    assert store.acquire_lease("ses_x", holder, now_ms(), now_ms() + 30_000, lambda _: True) == (True, None)
    with pytest.raises(AgentError) as busy:
        SessionLeases(store).take("ses_x")
    assert busy.value.kind is AgentErrorKind.SESSION_BUSY and f"pid {parent} on host" in busy.value.message
    wire = from_core(busy.value)
    assert wire.code == -32009 and wire.wire_data() == {
        "kind": "session_busy", "status": 409, "owner": {"pid": parent, "host": current().host}}


def test_a_dead_holders_lease_is_taken_over(store: Any) -> None:
    for dead in ("pid:999999999", f"pid:{os.getpid()}", other(nonce="earlier")):
        store.acquire_lease("ses_x", dead, now_ms(), now_ms() + 30_000, lambda _: True)
        assert SessionLeases(store).take("ses_x") is True
        assert store.lease("ses_x").owner == process_owner()
        # the dead one's heartbeat (were it to beat again) finds it gone
        assert not store.renew_lease("ses_x", dead, now_ms(), now_ms() + 30_000)
        store.release_lease("ses_x", process_owner())


def test_a_holder_that_cannot_be_looked_at_holds_while_its_heartbeat_is_young(store: Any) -> None:
    far = other(host="elsewhere")
    leases = SessionLeases(store, lambda: 30)
    store.acquire_lease("ses_x", far, now_ms() - 29_000, now_ms() + 1_000, lambda _: True)
    assert leases.owner_alive(far) and 0 < (leases.lapses_in(far) or 0) <= 1.0
    with pytest.raises(AgentError) as busy:
        leases.take("ses_x")
    assert "another host or pid namespace" in busy.value.message and "stopped for 30 s" in busy.value.message
    assert store.renew_lease("ses_x", far, now_ms() - 31_000, now_ms() - 1_000)  # lapsed
    assert not leases.owner_alive(far) and leases.lapses_in(far) is None
    assert leases.take("ses_x") is True


def test_the_holders_own_lease_length_decides_not_the_observers(store: Any) -> None:
    """A holder with a long lease beats rarely; an observer configured for a short one (a CLI
    `--config`) must not take its silence between beats for death."""
    far = other(host="elsewhere")
    store.acquire_lease("ses_x", far, now_ms() - 100_000, now_ms() + 200_000, lambda _: True)  # 300 s lease
    assert SessionLeases(store, lambda: 3).owner_alive(far)
    with pytest.raises(AgentError):
        SessionLeases(store, lambda: 3).take("ses_x")


def test_held_briefly_gives_back_only_what_it_took(store: Any) -> None:
    leases = SessionLeases(store)
    with leases.held_briefly("ses_x") as held:
        assert held and store.lease("ses_x").owner == process_owner()
    assert store.lease("ses_x") is None
    leases.take("ses_x")  # a generation of this process holds it
    with leases.held_briefly("ses_x") as held:
        assert held
    assert store.lease("ses_x").owner == process_owner()
    store.release_lease("ses_x", process_owner())
    store.acquire_lease("ses_x", other(host="elsewhere"), now_ms(), now_ms() + 30_000, lambda _: True)
    with leases.held_briefly("ses_x") as held:
        assert not held


# --- the session ------------------------------------------------------------------------------------


def _with_unanswered_call(tmp_path: Path) -> tuple[Any, str]:
    env = make_env(tmp_path, [reply(text="ok")])
    session = AgentSession(env)
    session.append(Message(role=Role.USER, parts=[TextPart(text="read a")]))
    session.append(Message(role=Role.ASSISTANT, parts=[ToolCallPart(call_id="c1", name="read_file",
                                                                    arguments='{"path": "a"}')]))
    return env, session.id


def test_loading_a_session_another_live_process_holds_neither_repairs_nor_writes(tmp_path: Path) -> None:
    env, sid = _with_unanswered_call(tmp_path)
    env.store.acquire_lease(sid, other(host="elsewhere"), now_ms(), now_ms() + 30_000, lambda _: True)
    loaded = AgentSession(env, sid)
    assert len(env.store.messages(sid)) == 2 and len(loaded.history) == 2
    loaded.note_external_change(["a"])  # an idle session's note waits: no write to a session held elsewhere
    assert len(env.store.messages(sid)) == 2 and loaded.pending_notes
    env.store.release_lease(sid, other(host="elsewhere"))
    assert len(AgentSession(env, sid).history) == 3  # free: repaired on load


async def test_a_run_catches_up_with_what_another_process_wrote(tmp_path: Path) -> None:
    from lsp_agent.core.agent import Agent

    env, sid = _with_unanswered_call(tmp_path)
    env.store.acquire_lease(sid, other(host="elsewhere"), now_ms(), now_ms() + 30_000, lambda _: True)
    agent = Agent(env)
    stale = agent.session(sid)
    with pytest.raises(AgentError) as busy:
        agent.start("mine", sid)
    assert busy.value.kind is AgentErrorKind.SESSION_BUSY and stale.active is None
    # the other process answers its call and lets go; this process's copy is as it loaded it
    env.store.append_message(sid, Message(role=Role.TOOL, parts=[
        ToolResultPart(call_id="c1", name="read_file", ok=True, output="done elsewhere")]))
    env.store.release_lease(sid, other(host="elsewhere"))
    assert len(stale.history) == 2
    started = agent.start("mine", sid)
    await agent.wait(started.generation)
    outputs = [p.output for m in env.store.messages(sid) for p in m.tool_results()]
    assert outputs == ["done elsewhere"]  # caught up: no second, "interrupted" result
    assert env.store.lease(sid) is None  # given back when the run ended


async def test_the_heartbeat_renews_and_reports_a_lease_taken_over(store: Any) -> None:
    import asyncio

    leases = SessionLeases(store, lambda: 0.3)  # below the setting's floor: only to keep the test short
    leases.take("ses_x")
    store.renew_lease("ses_x", process_owner(), 0, 30_000)
    lost = asyncio.Event()
    keeping = asyncio.ensure_future(leases.keep("ses_x", lost.set))
    try:
        async def renewed() -> None:
            while store.lease("ses_x").heartbeat_at == 0:
                await asyncio.sleep(0.02)

        await asyncio.wait_for(renewed(), 10)
        assert not lost.is_set()
        store.release_lease("ses_x", process_owner())  # another process took it over meanwhile
        store.acquire_lease("ses_x", other(host="elsewhere"), now_ms(), now_ms() + 30_000, lambda _: False)
        await asyncio.wait_for(lost.wait(), 10)
        await asyncio.wait_for(keeping, 10)  # it stops by itself
    finally:
        keeping.cancel()


def test_loading_takes_no_lease_unless_there_is_something_to_repair(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a session writes nothing, so it never waits for the store's write lock (another process
    holding it, a full disk); with a call to repair and the lease out of reach, it is read as stored."""
    env, sid = _with_unanswered_call(tmp_path)
    env.store.append_message(sid, Message(role=Role.TOOL, parts=[
        ToolResultPart(call_id="c1", name="read_file", ok=True, output="answered")]))

    def locked(*_: Any) -> Any:
        raise StoreUnavailable(StoreReason.LOCKED, "another process holds the write lock")

    monkeypatch.setattr(env.store, "acquire_lease", locked)
    assert len(AgentSession(env, sid).history) == 3  # whole: no lease asked for
    env2, sid2 = _with_unanswered_call(tmp_path / "other")
    monkeypatch.setattr(env2.store, "acquire_lease", locked)
    assert len(AgentSession(env2, sid2).history) == 2 and len(env2.store.messages(sid2)) == 2


async def test_a_compaction_or_handoff_asked_for_is_refused_while_another_process_holds_the_session(
        tmp_path: Path) -> None:
    from lsp_agent.core.agent import Agent

    env, sid = _with_unanswered_call(tmp_path)
    env.store.acquire_lease(sid, other(host="elsewhere"), now_ms(), now_ms() + 30_000, lambda _: True)
    agent = Agent(env)
    before = len(env.store.messages(sid))
    for request in (agent.context_requests.compact, agent.context_requests.handoff):
        with pytest.raises(AgentError) as busy:
            await request(sid)
        assert busy.value.kind is AgentErrorKind.SESSION_BUSY
    assert len(env.store.messages(sid)) == before and len(env.store.sessions()) == 1
