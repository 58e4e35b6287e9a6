"""Delta coalescing: fewer events for a fast stream, no lag for a slow one, order kept."""

from __future__ import annotations

import asyncio

from lsp_agent.core.deltas import DeltaCoalescer


async def test_a_burst_becomes_few_events_and_nothing_is_lost() -> None:
    out: list[tuple[str, str]] = []
    coalescer = DeltaCoalescer(lambda kind, text: out.append((kind, text)), window=0.02)
    pieces = [f"{i:04d}" for i in range(1000)]
    for piece in pieces:
        coalescer.add("text", piece)
    await asyncio.sleep(0.05)  # the timer sends what waited
    assert "".join(t for _, t in out) == "".join(pieces)
    assert len(out) <= 3


async def test_a_piece_after_a_pause_goes_out_at_once_and_a_waiting_one_within_the_window() -> None:
    out: list[tuple[str, str]] = []
    coalescer = DeltaCoalescer(lambda kind, text: out.append((kind, text)), window=0.02)
    coalescer.add("text", "a")
    assert out == [("text", "a")]  # first piece: immediately
    coalescer.add("text", "b")
    assert out == [("text", "a")]  # within the window: waits …
    await asyncio.sleep(0.04)
    assert out == [("text", "a"), ("text", "b")]  # … but not longer than the window


async def test_kinds_are_never_mixed_and_keep_their_order() -> None:
    out: list[tuple[str, str]] = []
    coalescer = DeltaCoalescer(lambda kind, text: out.append((kind, text)), window=10)
    for kind, text in [("reasoning", "r1"), ("reasoning", "r2"), ("text", "t1"), ("text", "t2")]:
        coalescer.add(kind, text)
    coalescer.flush()
    assert out == [("reasoning", "r1"), ("reasoning", "r2"), ("text", "t1t2")]
