"""A loop that shuts down while a command (or an eval attempt) is starting ends, and the command is killed.

A loop that shuts down cancels every task, asyncio's own included. asyncio's subprocess support
(Python 3.11 to 3.13.0) connects the pipes in a task of its own, and a start whose pipe task was
cancelled waited for ever for pipes that never connected: the server's exit, or a test's teardown,
hung. Each shutdown here lands at another point of the start.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from lsp_agent.eval.proctree import is_alive, run_tree
from lsp_agent.tools.process import run_process


@pytest.mark.parametrize("runner", ["command", "eval attempt"])
def test_a_loop_shut_down_while_commands_start_ends_and_kills_them(tmp_path: Path, runner: str) -> None:
    # Each loop's thread lives on until the end: a command is tied to the thread that started it
    # (the kernel kills it when that thread ends), which would hide a command the shutdown left running.
    release = threading.Event()
    try:
        for steps in range(40):
            finished = threading.Event()
            threading.Thread(target=_shut_down_after, args=(tmp_path, steps, finished, release, runner),
                             daemon=True).start()
            assert finished.wait(60), f"the loop never closed (shut down {steps} steps into a start)"
        deadline = time.monotonic() + 60
        while (left := _running_with(str(tmp_path))) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in left:  # a failing run leaves nothing behind either
            os.kill(pid, signal.SIGKILL)
        assert not left, "a command outlived the loop that started it"
    finally:
        release.set()


def _shut_down_after(cwd: Path, steps: int, finished: threading.Event, release: threading.Event,
                     runner: str) -> None:
    asyncio.run(_start_then_leave(cwd, steps, runner))
    finished.set()
    release.wait(300)


async def _start_then_leave(cwd: Path, steps: int, runner: str) -> None:
    # the workspace's path in the command line tells this test's commands apart; the task is left
    # running on purpose, for the loop's shutdown to cancel
    # it sleeps far longer than the test waits for it to go: only a kill ends it in time
    argv = [sys.executable, "-c", "import time; time.sleep(3600)", str(cwd)]
    starting = (run_process(argv, cwd, 7200) if runner == "command"
                else run_tree(argv, cwd, dict(os.environ), 7200, on_stdout=lambda _chunk: None))
    command = asyncio.ensure_future(starting)
    for _ in range(steps):
        await asyncio.sleep(0.0002)
    assert not command.done() or command.exception() is None


def _running_with(marker: str) -> list[int]:
    """Processes (not zombies) whose command line holds the marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            named = marker in (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if named and is_alive(int(entry.name)):
            found.append(int(entry.name))
    return found
