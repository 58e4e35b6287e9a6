"""Delta coalescing: fewer events for a fast stream, no lag for a slow one, order kept."""

from __future__ import annotations

import asyncio

from lsp_agent.core.deltas import DeltaCoalescer
from tests.helpers import wait_for


async def test_a_burst_becomes_few_events_and_nothing_is_lost() -> None:
    out: list[tuple[str, str]] = []
    # A window well above a loaded machine's pauses: one longer than the window (the process not
    # scheduled mid-burst) would rightly flush early and add an event.
    coalescer = DeltaCoalescer(lambda kind, text: out.append((kind, text)), window=0.5)
    pieces = [f"{i:04d}" for i in range(1000)]
    for piece in pieces:
        coalescer.add("text", piece)
    await wait_for(lambda: "".join(t for _, t in out) == "".join(pieces))  # the timer sends what waited
    assert len(out) <= 3


async def test_a_piece_after_a_pause_goes_out_at_once_and_a_waiting_one_within_the_window() -> None:
    out: list[tuple[str, str]] = []
    window = 0.5  # well above a loaded machine's pause between the two adds
    coalescer = DeltaCoalescer(lambda kind, text: out.append((kind, text)), window=window)
    coalescer.add("text", "a")
    assert out == [("text", "a")]  # first piece: immediately
    coalescer.add("text", "b")
    assert out == [("text", "a")]  # within the window: waits …
    # The flush timer is due at most `window` from now, before this sleep's own timer on the same loop:
    # the loop runs due timers in deadline order, however late it is, so this holds under any load.
    await asyncio.sleep(window * 1.5)
    assert out == [("text", "a"), ("text", "b")]  # … but not longer than the window


async def test_kinds_are_never_mixed_and_keep_their_order() -> None:
    out: list[tuple[str, str]] = []
    coalescer = DeltaCoalescer(lambda kind, text: out.append((kind, text)), window=10)
    for kind, text in [("reasoning", "r1"), ("reasoning", "r2"), ("text", "t1"), ("text", "t2")]:
        coalescer.add(kind, text)
    coalescer.flush()
    assert out == [("reasoning", "r1"), ("reasoning", "r2"), ("text", "t1t2")]
