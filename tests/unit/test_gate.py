from __future__ import annotations

import asyncio

from lsp_agent.core.gate import Gate
from tests.helpers import wait_for


async def _op(gate: Gate, name: str, exclusive: bool, log: list[str], delay: float | asyncio.Event = 0.1) -> str:
    """Hold the gate for `delay` seconds, or until the event `delay` is set."""
    async with gate.hold(exclusive):
        log.append(f"start {name}")
        if isinstance(delay, asyncio.Event):
            await delay.wait()
        else:
            await asyncio.sleep(delay)
        log.append(f"end {name}")
    return name


async def test_three_reads_overlap_in_about_one_read_time() -> None:
    gate, log = Gate(), []
    release = asyncio.Event()
    reads = asyncio.gather(*(_op(gate, f"r{i}", False, log, release) for i in range(3)))
    # All three hold the gate at once: none ends before the release, so serial reads would never all start.
    await wait_for(lambda: len(log) == 3)
    assert log == ["start r0", "start r1", "start r2"]
    release.set()
    assert await reads == ["r0", "r1", "r2"]


async def test_write_waits_for_reads_and_blocks_later_reads() -> None:
    gate, log = Gate(), []
    await asyncio.gather(
        _op(gate, "r1", False, log), _op(gate, "w", True, log), _op(gate, "r2", False, log))
    assert log.index("start w") > log.index("end r1")
    assert log.index("start r2") > log.index("end w")


async def test_writes_run_alone_in_arrival_order() -> None:
    gate, log = Gate(), []
    await asyncio.gather(*(_op(gate, f"w{i}", True, log, 0.02) for i in range(4)))
    assert log == [x for i in range(4) for x in (f"start w{i}", f"end w{i}")]


async def test_cancelled_waiter_never_runs_and_frees_its_place() -> None:
    gate, log = Gate(), []
    release = asyncio.Event()
    first = asyncio.ensure_future(_op(gate, "w1", True, log, release))  # holds the gate until released
    await wait_for(lambda: log == ["start w1"])
    waiting = asyncio.ensure_future(_op(gate, "w2", True, log, 0.1))
    after = asyncio.ensure_future(_op(gate, "r3", False, log, 0.01))
    await asyncio.sleep(0)  # both tasks take their first step: they queue behind w1
    waiting.cancel()
    release.set()
    await asyncio.gather(first, after)
    assert waiting.cancelled()
    assert "start w2" not in log
    assert log == ["start w1", "end w1", "start r3", "end r3"]
