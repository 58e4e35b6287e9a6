"""Start a program whose output the event loop reads, and learn when it exited.

asyncio's own subprocess support connects the pipes in a task of its own. When that task is
cancelled — and a loop that shuts down cancels every task — the clean-up of a start in progress
waits for pipes that never connected, so the task that started the process never ends (seen in
Python 3.11 to 3.13.0): the server's exit, or a test's teardown, hangs. Here the process starts
synchronously (as asyncio's does), the output pipe is connected by the caller's own task, and a
thread of the process's own reports its exit, so a cancellation at any point lets the caller go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


class _Output(asyncio.StreamReaderProtocol):
    """Feeds the reader and marks when the pipe closed (every writer, children included, gone)."""

    def __init__(self, reader: asyncio.StreamReader, closed: asyncio.Future[None]) -> None:
        super().__init__(reader)
        self._closed = closed

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self._closed.done():
            self._closed.set_result(None)


class Started:
    """A running program: its output as a stream (when piped), its exit as a future."""

    def __init__(self, popen: subprocess.Popen[bytes], exit_code: asyncio.Future[int],
                 output: asyncio.StreamReader | None, output_closed: asyncio.Future[None] | None,
                 transport: asyncio.ReadTransport | None) -> None:
        self.pid = popen.pid
        self.stdout = output
        #: resolved with the exit code the moment the process exits (its pipes may stay open)
        self.exited = exit_code
        self._output_closed = output_closed
        self._transport = transport

    @property
    def returncode(self) -> int | None:
        """Negative for a signal, like subprocess's; None while it runs."""
        done = self.exited.done() and not self.exited.cancelled()
        return self.exited.result() if done else None

    async def wait(self) -> int:
        """The exit and the output pipe closed (what asyncio's own `wait()` waits for)."""
        code = await asyncio.shield(self.exited)
        if self._output_closed is not None:
            await asyncio.shield(self._output_closed)
        return code

    def close(self) -> None:
        """Stop reading the output (a child that escaped may still hold the pipe)."""
        if self._transport is not None:
            self._transport.close()


def _reap(popen: subprocess.Popen[bytes], data: bytes | None, loop: asyncio.AbstractEventLoop,
          exit_code: asyncio.Future[int]) -> None:
    """The process's own thread: write its input (it may block until the program reads or dies),
    wait for its exit, and tell the loop — unless the loop has closed meanwhile."""
    if data is not None and popen.stdin is not None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
            popen.stdin.write(data)
        with contextlib.suppress(OSError):
            popen.stdin.close()
    code = popen.wait()
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(_settle, exit_code, code)


def _settle(exit_code: asyncio.Future[int], code: int) -> None:
    if not exit_code.done():
        exit_code.set_result(code)


def watch_exit(popen: subprocess.Popen[bytes], data: bytes | None = None) -> asyncio.Future[int]:
    """A future the process's exit code resolves, reported by a thread of the process's own (which
    first writes `data` to its input and closes it, when given). Call from the running loop."""
    loop = asyncio.get_running_loop()
    exit_code: asyncio.Future[int] = loop.create_future()
    threading.Thread(target=_reap, args=(popen, data, loop, exit_code), daemon=True,
                     name=f"lsp-agent-process-{popen.pid}").start()
    return exit_code


async def start(argv: list[str], cwd: Path, env: dict[str, str] | None, stdin: bytes | None,
                preexec_fn: Callable[[], None] | None, *, stdout: Any = subprocess.PIPE,
                stderr: Any = subprocess.STDOUT) -> Started:
    """Start argv in a session (process group) of its own. `stdin`: the bytes to give it (None:
    /dev/null); `stdout`: piped to `Started.stdout` (the default) or where subprocess may send it (a
    file, DEVNULL); `stderr` likewise (default: into stdout). Raises what subprocess raises for a
    program that cannot start (FileNotFoundError, PermissionError). If cancelled while the output
    pipe connects, the process group is killed first."""
    loop = asyncio.get_running_loop()
    # fork and exec on the loop's thread, as asyncio's own subprocess support does: quick, and a
    # thread here would only move the same wait elsewhere
    popen = subprocess.Popen(  # noqa: ASYNC220
        argv, cwd=str(cwd), env=env,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=stdout, stderr=stderr, start_new_session=True, preexec_fn=preexec_fn,
    )
    exit_code = watch_exit(popen, stdin)
    if popen.stdout is None:
        return Started(popen, exit_code, None, None, None)
    reader = asyncio.StreamReader(limit=2**16, loop=loop)
    closed: asyncio.Future[None] = loop.create_future()
    try:
        transport, _ = await loop.connect_read_pipe(lambda: _Output(reader, closed), popen.stdout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)
        popen.stdout.close()
        raise
    return Started(popen, exit_code, reader, closed, transport)
