"""Read-only calls of one step overlap in time through the real loop: a test that fails
when the gate serialises them. Writes still run alone."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from lsp_agent.app.toolset import default_registry
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from lsp_agent.core.tool_registry import ToolRegistry
from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext, ToolResult
from tests.helpers import call, make_env, reply

HOLD_S = 0.4
#: (tool, label, start, end) per run, monotonic seconds
SPANS: list[tuple[str, str, float, float]] = []


class SlowArgs(StrictArgs):
    label: str


class _Slow(Tool[SlowArgs]):
    args_model: ClassVar[type[StrictArgs]] = SlowArgs
    summary: ClassVar[str] = "Wait a moment (test tool)."
    use_when: ClassVar[str] = "testing"
    avoid_when: ClassVar[str] = "never"

    async def run(self, args: SlowArgs, ctx: ToolContext) -> ToolResult:
        start = time.monotonic()
        await asyncio.sleep(HOLD_S)
        SPANS.append((self.name, args.label, start, time.monotonic()))
        return ToolResult.success(f"waited ({args.label})")


class SlowRead(_Slow):
    name: ClassVar[str] = "slow_read"
    access: ClassVar[Access] = Access.READ


class SlowWrite(_Slow):
    name: ClassVar[str] = "slow_write"
    access: ClassVar[Access] = Access.WRITE


def overlap(a: tuple[str, str, float, float], b: tuple[str, str, float, float]) -> float:
    return min(a[3], b[3]) - max(a[2], b[2])


async def run_step(root: Path, *calls: tuple[str, str]) -> list[tuple[str, str, float, float]]:
    SPANS.clear()
    env = make_env(root, [reply(*(call(name, label=label) for name, label in calls)), reply(text="done")])
    tools = [*(env.registry.get(n) for n in default_registry(env.settings).names()), SlowRead(), SlowWrite()]
    env = replace(env, registry=ToolRegistry([t for t in tools if t is not None]))
    result = await Generation(AgentSession(env)).run("wait")
    assert (result.stop_reason.value, result.tool_calls, result.tool_errors) == ("final", len(calls), 0)
    return sorted(SPANS, key=lambda s: s[1])


async def test_two_reads_of_one_step_overlap_in_time(tmp_path: Path) -> None:
    first, second = await run_step(tmp_path, ("slow_read", "a"), ("slow_read", "b"))
    # Serialised, one would start only after the other ended; together each starts while the other
    # holds (HOLD_S each). No bound on how long they took: a loaded machine may be slow to wake them.
    assert overlap(first, second) > 0


async def test_a_write_between_reads_runs_alone(tmp_path: Path) -> None:
    a, b, c = await run_step(tmp_path, ("slow_read", "a"), ("slow_write", "b"), ("slow_read", "c"))
    assert overlap(a, b) <= 0 and overlap(b, c) <= 0  # the write never overlaps a read
    assert a[3] <= b[2] <= b[3] <= c[2]  # arrival order kept: a later read does not overtake the write
