"""The fold (70 %) and compaction (95 %) thresholds: nothing happens at the limit, the action one
token past it. The window is chosen so the limit lands exactly on the request's size."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from lsp_agent.context.budget import Budget
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession, Environment
from lsp_agent.settings.config import load_settings
from tests.helpers import call, reply
from tests.unit.test_context_support import context_env, failing_repo


async def _history(root: Path) -> tuple[Environment, Any, str]:
    failing_repo(root)
    replies = [reply(call("read_file", path=f"data/f{i % 10}.txt", start_line=1 + i // 10)) for i in range(30)]
    env, provider = context_env(root, [*replies, reply(text="done")], compaction={"context_window": 1_000_000},
                                maxSteps=60)
    session = AgentSession(env)
    result = await Generation(session).run("read the data files")
    assert result.stop_reason.value == "final"
    return env, provider, session.id


def _window_for(tokens: int, share: float) -> int:
    """A window (no reserve) whose int(window * share) is exactly `tokens`."""
    window = int(tokens / share)
    while int(window * share) < tokens:
        window += 1
    assert int(window * share) == tokens
    return window


async def _fit(env: Environment, session_id: str, root: Path, **compaction: Any) -> tuple[int, Budget]:
    """Fit the next request of the stored session under these settings; the size before fitting."""
    settings = load_settings(root, {"compaction": {"output_reserve_tokens": 0, **compaction}})
    session = AgentSession(replace(env, settings=settings), session_id)
    generation = Generation(session)
    manager = generation._context()

    def build() -> Any:
        return generation.build_request(generation.capabilities())

    before = manager.tokens(build())
    await manager.fit(build)
    return before, manager.budget()


async def _size(env: Environment, session_id: str, root: Path) -> int:
    before, _ = await _fit(env, session_id, root, context_window=1_000_000)
    return before


async def test_fold_at_70_percent_not_at_the_limit_but_one_past(tmp_path: Path) -> None:
    env, _, sid = await _history(tmp_path)
    size = await _size(env, sid, tmp_path)

    at, budget = await _fit(env, sid, tmp_path, context_window=_window_for(size, 0.70))
    assert (at, budget.fold_limit) == (size, size)
    assert not env.store.events(sid, "context.fold")

    past, budget = await _fit(env, sid, tmp_path, context_window=_window_for(size - 1, 0.70))
    assert (past, budget.fold_limit) == (size, size - 1)
    assert len(env.store.events(sid, "context.fold")) == 1


async def test_compaction_at_95_percent_not_at_the_limit_but_one_past(tmp_path: Path) -> None:
    env, provider, sid = await _history(tmp_path)
    size = await _size(env, sid, tmp_path)
    asked = len(provider.requests)

    at, budget = await _fit(env, sid, tmp_path, fold=False, context_window=_window_for(size, 0.95))
    assert (at, budget.compact_limit) == (size, size)
    assert len(provider.requests) == asked  # no summary asked for
    assert not env.store.events(sid, "context.compaction")

    try:
        await _fit(env, sid, tmp_path, fold=False, context_window=_window_for(size - 1, 0.95))
    except Exception as exc:  # the scripted model's summary may free too little: still, it was attempted
        assert getattr(exc, "kind", "") in ("compaction_ineffective", "context_overflow"), exc
    assert len(provider.requests) == asked + 1  # the summary request went out
