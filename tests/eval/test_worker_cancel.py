"""A Ray worker's cancel is an interrupt, and Ray repeats it while the task runs: the repeat must not
cut the cancelled attempt's cleanup (the tree kill) short. Both interrupts are raised here by the
test's own thread, at chosen points, as Ray raises them (`_thread.interrupt_main`)."""

from __future__ import annotations

import _thread
import asyncio
import signal

import pytest

from lsp_agent.eval.executor import _on_worker


def test_a_repeated_cancel_does_not_cut_the_cleanup_short() -> None:
    finished: list[str] = []

    async def attempt() -> None:
        asyncio.get_running_loop().call_later(0.05, _thread.interrupt_main)  # Ray's first cancel
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            _thread.interrupt_main()  # Ray's repeat, while the tree is being killed
            for _ in range(1000):  # bytecode runs: an interrupt that is handled lands in here
                pass
            finished.append("tree killed")
            raise

    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        _on_worker(attempt())
    assert finished == ["tree killed"]
    assert signal.getsignal(signal.SIGINT) is handler  # interrupts are handled again afterwards
