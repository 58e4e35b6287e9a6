"""Shutting down while the first checkpoint (the baseline) is still being taken in the background:
the task is stopped and awaited (nothing pending when the loop closes), nothing half-recorded is
left, and the next start takes the baseline again."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from lsp_agent.checkpoints.workspace import CheckpointsClosed, WorkspaceCheckpoints
from lsp_agent.core.agent import Agent
from tests.helpers import git_repo, make_env, reply


def test_shutdown_during_a_long_baseline_stops_it_and_the_next_start_takes_it(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "ws", {"a.txt": "one\n", "b.txt": "two\n"})
    env = make_env(root, [reply(text="only looked")])
    assert isinstance(env.checkpoints, WorkspaceCheckpoints)
    base = env.checkpoints.base
    loop = asyncio.new_event_loop()
    reached = asyncio.Event()

    async def never_answers(_root: Path, _paths: list[str]) -> set[str]:
        """The baseline's look-up of ignored paths: stands for a baseline still busy at shutdown."""
        reached.set()
        await asyncio.Event().wait()
        return set()

    slow = WorkspaceCheckpoints(root, base, lambda: env.settings.checkpoints, never_answers)

    async def scenario() -> None:
        agent = Agent(replace(env, checkpoints=slow))
        started = agent.start("look around")
        await agent.wait(started.generation)
        await asyncio.wait_for(reached.wait(), 60)
        await agent.shutdown()

    try:
        loop.run_until_complete(scenario())
        # the pygls loop closes without cancelling what is left: nothing may be left
        assert [t for t in asyncio.all_tasks(loop) if not t.done()] == []
    finally:
        loop.close()
    assert slow.chain.records == []  # nothing half-recorded

    again = WorkspaceCheckpoints(root, base, lambda: env.settings.checkpoints)
    asyncio.run(again.prepare())
    (baseline,) = again.chain.records
    assert baseline.phase == "baseline" and {"a.txt", "b.txt"} <= set(baseline.changes)


def test_a_closed_store_records_nothing_more(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "ws", {"a.txt": "one\n"})
    env = make_env(root, [])
    store = WorkspaceCheckpoints(root, tmp_path / "ckpt", lambda: env.settings.checkpoints)

    async def closed_then_prepared() -> None:
        await store.close()
        await store.prepare()
    with pytest.raises(CheckpointsClosed):
        asyncio.run(closed_then_prepared())
    assert store.chain.records == []
