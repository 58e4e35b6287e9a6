"""A Ray worker's cancel is an interrupt (`_thread.interrupt_main`), and Ray repeats it while the task
runs. Neither where the first one lands nor a repeat may leave the attempt's process tree running."""

from __future__ import annotations

import _thread
import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_agent.eval import proctree
from lsp_agent.eval.executor import _on_worker
from lsp_agent.eval.proctree import is_alive, run_tree


@pytest.fixture
def python_interrupts() -> Iterator[None]:
    """SIGINT handled as Python does by default (as on a Ray worker), whatever an earlier test set."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("python_interrupts")
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

    with pytest.raises(KeyboardInterrupt):
        _on_worker(attempt())
    assert finished == ["tree killed"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handled again afterwards


SPAWNER = """
import json, subprocess, sys, time
same = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
own = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
open(sys.argv[1], "w").write(json.dumps([same.pid, own.pid]))
time.sleep(120)
"""


def test_an_interrupt_inside_the_attempt_still_kills_its_whole_tree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The interrupt lands in run_tree's own frame (not in the event loop): the coroutine unwinds with
    # KeyboardInterrupt instead of being cancelled.
    pids_file = tmp_path / "pids.json"

    async def interrupted_once_started(*_args: object) -> bool:
        deadline = time.monotonic() + 60
        while not pids_file.exists() or not pids_file.read_text():
            assert time.monotonic() < deadline, "the spawner never wrote its children's pids"
            await asyncio.sleep(0.02)
        raise KeyboardInterrupt

    monkeypatch.setattr(proctree, "_first", interrupted_once_started)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(run_tree([sys.executable, "-c", SPAWNER, str(pids_file)], tmp_path, dict(os.environ), 60))
    children = json.loads(pids_file.read_text())
    deadline = time.monotonic() + 30
    while any(is_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in children if is_alive(pid)] == []
