"""Bounded memory: a long-lived Agent keeps at most `limits.sessions_in_memory` idle
sessions loaded (least recently used dropped; they reload from the store on demand), never drops one
that runs, frees a dropped session at once (no reference cycle waiting for a GC pass), gives freed
pages back to the OS, and its RSS stays flat over many sessions and a 1,000-step session.

The RSS figures run the real core in this process: sqlite store on disk, real tools, scripted model.
LSP_AGENT_SOAK_SCALE=N multiplies the step and session counts (the soak version; see docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import gc
import os
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any

from lsp_agent._startup import memory
from lsp_agent.core.agent import Agent
from lsp_agent.domain.events import StopReason
from lsp_agent.providers.scripted import Script, ScriptedProvider
from tests.helpers import RecordingSink, call, make_agent, make_env, reply

SCALE = max(1, int(os.environ.get("LSP_AGENT_SOAK_SCALE", "1")))
FLAT_MB = 10.0


class DroppingSink(RecordingSink):
    """Forgets every event (the recording double would itself grow without end)."""

    def emit(self, event: Any) -> None:
        pass


def rss_mb() -> float:
    """Resident set size of this process, from /proc (Linux)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


async def finish(agent: Agent, session_id: str | None, prompt: str, max_steps: int | None = None) -> str:
    started = agent.start(prompt, session_id, max_steps=max_steps)
    result = await agent.wait(started.generation)
    assert result is not None and result.stop_reason in (StopReason.FINAL, StopReason.STEP_LIMIT), result
    return str(started.session_id)


# --- the cache's rules --------------------------------------------------------------------------


async def test_idle_sessions_beyond_the_setting_are_dropped_least_recently_used_first(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="done")], limits={"sessions_in_memory": 2})
    a = await finish(agent, None, "a")
    b = await finish(agent, None, "b")
    assert list(agent.sessions) == [a, b]  # at the limit: nothing dropped
    agent.session(a)  # a is used again: b is now the least recently used
    c = await finish(agent, None, "c")
    assert list(agent.sessions) == [a, c]  # one past the limit: b goes
    # b reloads from the store on demand, whole.
    reloaded = agent.session(b)
    assert [m.text() for m in reloaded.history] == ["b", "done"]
    assert list(agent.sessions) == [c, b]


async def test_a_running_session_is_never_dropped(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="slow", delay_ms=300)], limits={"sessions_in_memory": 1})
    first = agent.start("runs")
    second = agent.start("runs too")  # one past the limit, but both run: both stay
    assert list(agent.sessions) == [first.session_id, second.session_id]
    assert all(s.active is not None for s in agent.sessions.values())
    await agent.wait(first.generation)
    await agent.wait(second.generation)
    assert list(agent.sessions) == [second.session_id]  # idle now: the least recently used went
    assert agent.status(first.session_id).state == "idle"  # reloads on demand
    assert list(agent.sessions) == [first.session_id]


# --- RSS ------------------------------------------------------------------------------------------


async def test_rss_is_flat_over_many_sessions_opened_in_one_agent(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x = 1\n" * 200, encoding="utf-8")
    agent = make_agent(tmp_path, [reply(call("read_file", path="a.txt")), reply(text="done " * 200)],
                       sink=DroppingSink())
    for n in range(10):  # warm up: caches, imports, the session cache full
        await finish(agent, None, f"warm {n}")
    await memory.released()
    before = rss_mb()
    count = 100 * SCALE
    for n in range(count):
        await finish(agent, None, f"session {n}")
    await memory.released()  # no gc.collect(): nothing may wait for a GC pass
    grown = rss_mb() - before
    print(f"\nRSS over {count} sessions: {before:.1f} -> {before + grown:.1f} MB ({grown:+.1f} MB); "
          f"{len(agent.sessions)} loaded")
    assert len(agent.sessions) == agent.env.settings.limits.sessions_in_memory
    assert grown <= FLAT_MB


async def test_rss_is_flat_over_a_long_session(tmp_path: Path) -> None:
    """1,000 steps (SCALE=5: 5,000) of read_file calls in one session, as generations of 100 steps, with
    other sessions used in between, so the long one goes idle and is dropped and reloaded each round."""
    (tmp_path / "a.txt").write_text("x = 1\n" * 200, encoding="utf-8")
    env = make_env(tmp_path, [], DroppingSink(), limits={"sessions_in_memory": 2, "loop_stop_repeats": 100_000,
                                                         "loop_warn_repeats": 100_000})
    script = Script(label="steps", replies=[reply(call("read_file", path="a.txt"), text="reading")], repeat_last=True)
    agent = Agent(replace(env, provider=ScriptedProvider(script)))
    per_round = 100
    sid = await finish(agent, None, "warm up", max_steps=per_round)
    for m in range(2):
        await finish(agent, None, f"warm other {m}", max_steps=1)
    await memory.released()
    before = rss_mb()
    rounds = 10 * SCALE - 1
    for n in range(rounds):
        await finish(agent, sid, f"round {n}", max_steps=per_round)
        for m in range(2):  # two other sessions push the long one out of memory
            await finish(agent, None, f"other {n}.{m}", max_steps=1)
    await memory.released()  # no gc.collect(): nothing may wait for a GC pass
    grown = rss_mb() - before
    steps = sum(1 for m in agent.env.store.messages(sid) if m.role.value == "assistant")
    print(f"\nRSS over a {steps}-step session: {before:.1f} -> {before + grown:.1f} MB ({grown:+.1f} MB)")
    assert steps == per_round * (rounds + 1)
    assert sid not in agent.sessions
    assert grown <= FLAT_MB


async def test_a_dropped_session_is_freed_without_a_gc_pass(tmp_path: Path) -> None:
    """Reference counting alone frees a session (and its history) once the Agent drops it and its
    generations ended: a cycle (e.g. a generation's parts holding its bound methods) would keep a large
    history alive until the cyclic GC happened to run."""
    agent = make_agent(tmp_path, [reply(call("read_file", path="a.txt")), reply(text="done")],
                       sink=DroppingSink(), limits={"sessions_in_memory": 1})
    (tmp_path / "a.txt").write_text("x = 1\n", encoding="utf-8")
    gc.collect()
    gc.disable()
    try:
        sid = await finish(agent, None, "first")
        dropped = weakref.ref(agent.sessions[sid])
        history = weakref.ref(agent.sessions[sid].history[-1])
        await finish(agent, None, "second")  # one past the limit: the first is dropped
        await asyncio.sleep(0)
        assert sid not in agent.sessions
        assert dropped() is None and history() is None
    finally:
        gc.enable()


def test_freed_heap_pages_go_back_to_the_os() -> None:
    """After a burst of medium allocations is freed (one kept at the top of the heap, so the heap cannot
    simply shrink), `release_now` returns the free pages: RSS drops by most of the burst."""
    if not memory.available():
        import pytest

        pytest.skip("no glibc malloc_trim on this platform")
    burst = [bytearray(64 * 1024) for _ in range(640)]  # 40 MB below the mmap threshold: on the heap
    for block in burst:
        block[::4096] = b"x" * len(block[::4096])  # touch every page
    keep = burst.pop()
    full = rss_mb()
    del burst
    freed = rss_mb()
    memory.release_now()
    trimmed = rss_mb()
    print(f"\nRSS: {full:.1f} MB with the burst, {freed:.1f} MB freed, {trimmed:.1f} MB after release_now")
    assert freed - trimmed >= 25, (full, freed, trimmed)
    assert keep


# --- large rejected messages (the real server over stdio) -----------------------------------------


def server_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        line = next(x for x in status if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def settled_growth(pid: int, before: float, within_s: float = 6.0) -> float:
    """RSS growth once the server's GC passes after a large frame (0.5 s and 3 s after it) and its page
    release (a worker thread) are done: polled for a few seconds — an idle server runs no GC pass of
    its own meanwhile."""
    import time

    deadline = time.monotonic() + within_s
    while (grown := server_rss_mb(pid) - before) > FLAT_MB and time.monotonic() < deadline:
        time.sleep(0.1)
    return grown


def test_large_rejected_messages_are_freed_at_once(tmp_path: Path) -> None:
    """40 MB requests the server refuses — a body that is not JSON, an LSP method whose params do not
    fit, an agent/run whose prompt is over its limit — leave the server's RSS where it was: none of
    them waits in a reference cycle for a GC pass (the issue saw 526 MB after eight)."""
    import json

    from tests.reliability.framing_client import RawServer, frame, message

    big = "x" * (40 * 2**20)
    server = RawServer(tmp_path)
    try:
        server.initialize()
        server.request("agent/status", {})
        before = server_rss_mb(server.proc.pid)
        bodies = {
            "not JSON": lambda: b"{" + big.encode(),
            "params that do not fit": lambda: message(id=server.new_id(), method="textDocument/hover",
                                                      params={"textDocument": big}),
            "prompt over the limit": lambda: message(id=server.new_id(), method="agent/run", params={"prompt": big}),
            "steer text over the limit (an async handler)": lambda: message(
                id=server.new_id(), method="agent/steer",
                params={"sessionId": "ses_x", "expectedGeneration": "g", "text": big, "clientId": "c1"}),
            "a batch": lambda: json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "agent/run", "params": big}]).encode(),
        }
        seen = []
        for name, body in bodies.items():
            for _ in range(2):
                server.send(frame(body()))
                answer = server.request("agent/status", {}, timeout=120)  # the server read it and answers
                assert "result" in answer
                seen.append((name, round(settled_growth(server.proc.pid, before), 1)))
        print(f"\nserver RSS {before:.1f} MB; growth after each large rejected frame: {seen}")
        assert all(grown <= FLAT_MB for _, grown in seen), seen
    finally:
        server.close()


def test_a_release_left_pending_by_a_closed_loop_does_not_block_the_next_loop() -> None:
    """A release scheduled just before its event loop closed never completes; the next loop (a new
    headless run, the next test) must still release and wait for its own releases."""
    if not memory.available():
        import pytest

        pytest.skip("no glibc malloc_trim on this platform")

    async def schedule_and_leave() -> None:
        memory.release_soon()

    async def release_and_wait() -> None:
        memory.release_soon()
        await asyncio.wait_for(memory.released(), 10)

    first = asyncio.new_event_loop()
    first.run_until_complete(schedule_and_leave())
    first.close()
    asyncio.run(release_and_wait())
