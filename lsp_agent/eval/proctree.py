"""Run one program as the root of its own session and, when it must end, end all of it.

A process-group kill alone misses descendants that started their own session
(the agent's run_command children do, on purpose), so before killing we walk
/proc for every descendant and every member of the root's session and group,
stop them (so nothing new is spawned while we look), repeat until no new
process appears, then SIGKILL the lot. Without /proc (not Linux) the process
group is killed, which is what most runners do.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_agent.tools.spawn import start

_PROC = Path("/proc")
_STOP_ROUNDS = 20


@dataclass(frozen=True)
class _Stat:
    ppid: int
    pgrp: int
    session: int
    state: str


def _stat(pid: int) -> _Stat | None:
    try:
        raw = (_PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces or ')'.
    fields = raw[raw.rfind(")") + 2:].split()
    try:
        return _Stat(ppid=int(fields[1]), pgrp=int(fields[2]), session=int(fields[3]), state=fields[0])
    except (IndexError, ValueError):
        return None


def _table() -> dict[int, _Stat]:
    table: dict[int, _Stat] = {}
    with contextlib.suppress(OSError):
        for entry in os.listdir(_PROC):
            if entry.isdigit() and (st := _stat(int(entry))) is not None:
                table[int(entry)] = st
    return table


def _members(root: int, table: dict[int, _Stat], include_root: bool) -> set[int]:
    """Live processes that belong to root: its session, its process group, and all their descendants.

    Once root has exited (and been reaped) its pid may be reused, so it only counts while alive.
    """
    children: dict[int, list[int]] = {}
    for pid, st in table.items():
        children.setdefault(st.ppid, []).append(pid)
    found = {pid for pid, st in table.items() if st.session == root or st.pgrp == root}
    if include_root and root in table:
        found.add(root)
    todo = list(found)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    me = os.getpid()
    return {pid for pid in found if pid != me and table[pid].state not in ("Z", "X")}


def is_alive(pid: int) -> bool:
    """True while pid exists and is not a zombie (a killed orphan may linger as one until reaped)."""
    if _PROC.is_dir():
        st = _stat(pid)
        return st is not None and st.state not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_tree(root: int, root_alive: bool = True) -> int:
    """SIGKILL root, its session, its group and their descendants; returns how many were signalled."""
    if not _PROC.is_dir():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(root, signal.SIGKILL)
        return 0
    doomed: set[int] = set()
    for _ in range(_STOP_ROUNDS):
        fresh = _members(root, _table(), root_alive) - doomed
        if not fresh:
            break
        for pid in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
        doomed |= fresh
    for pid in doomed:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(root, signal.SIGKILL)
    return len(doomed)


@dataclass(frozen=True)
class Finished:
    exit_code: int | None  # None when killed (by us or by a signal) or never started
    timed_out: bool = False
    cancelled: bool = False
    duration_ms: int = 0  # start to exit (or to the kill)
    spawn_error: str | None = None
    output_cut: bool = False  # stdout was still open after the tree was killed


async def _first(exited: asyncio.Future[int], cancel: asyncio.Event | None, timeout_s: float) -> bool:
    """True when the process exited within the budget and before a cancel. The exit itself, not
    its pipes closing: a descendant that inherited stdout may keep it open."""
    watchers = {asyncio.ensure_future(asyncio.shield(exited))}
    if cancel is not None:
        watchers.add(asyncio.ensure_future(cancel.wait()))
    try:
        await asyncio.wait(watchers, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for watcher in watchers:
            watcher.cancel()
    return exited.done()


async def run_tree(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
                   cancel: asyncio.Event | None = None, on_stdout: Callable[[bytes], None] | None = None,
                   log_to: Path | None = None) -> Finished:
    """Run argv in a new session; kill the whole tree on timeout, on cancel, and after it exits.

    stdout goes to `on_stdout` when given; everything else to the `log_to` file (or nowhere).
    """
    if cancel is not None and cancel.is_set():
        return Finished(exit_code=None, cancelled=True)
    err_file = log_to.open("ab") if log_to is not None else None
    sink: Any = err_file if err_file is not None else subprocess.DEVNULL
    started = time.monotonic()
    try:
        # Not asyncio's subprocess transport: a loop shut down while it connected the pipes waited
        # for ever (see tools/spawn.py).
        proc = await start(argv, cwd, env, None, None, stdout=subprocess.PIPE if on_stdout else sink, stderr=sink)
    except OSError as exc:
        return Finished(exit_code=None, spawn_error=f"{type(exc).__name__}: {exc.strerror or exc}")
    finally:
        if err_file is not None:
            err_file.close()  # the child holds its own copy
    reader = asyncio.create_task(_pump(proc.stdout, on_stdout)) if on_stdout and proc.stdout else None
    try:
        exited = await _first(proc.exited, cancel, timeout_s)
        duration_ms = int((time.monotonic() - started) * 1000)
        if not exited:
            kill_tree(proc.pid)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(proc.exited), 10)
        # Leftovers (background children still in the session) must not outlive the attempt
        # or keep the stdout pipe open.
        kill_tree(proc.pid, root_alive=not proc.exited.done())
        output_cut = False
        if reader is not None:
            try:
                await asyncio.wait_for(asyncio.shield(reader), 5)
            except TimeoutError:
                output_cut = True  # a descendant we could not reach still holds the pipe
    except BaseException:
        # Cancelled, or interrupted in this very frame (a Ray worker's cancel is a KeyboardInterrupt,
        # which unwinds the coroutine without cancelling it): the tree goes either way.
        kill_tree(proc.pid, root_alive=not proc.exited.done())
        raise
    finally:
        if reader is not None:
            reader.cancel()
        proc.close()
    timed_out = not exited and not (cancel is not None and cancel.is_set())
    code = proc.returncode
    return Finished(exit_code=code if exited and code is not None and code >= 0 else None,
                    timed_out=timed_out, cancelled=not exited and not timed_out,
                    duration_ms=duration_ms, output_cut=output_cut)


async def _pump(stream: asyncio.StreamReader, sink: Callable[[bytes], None]) -> None:
    while chunk := await stream.read(65536):
        sink(chunk)
