"""Run a program in its own process group, bounded in time and output.

Used by run_command and verify_project (inside the OS sandbox) and by the harness's own git
and rg calls. Never through a shell; on timeout or cancellation the whole group is killed and
the partial output kept. The environment is rebuilt from an allow-list, never inherited, and
git never runs what the repository's config names.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import logging
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lsp_agent.core.cancel import cancel_signal
from lsp_agent.sandbox.bwrap import own_failure
from lsp_agent.sandbox.env import command_env
from lsp_agent.sandbox.git import git_env, harden_argv
from lsp_agent.sandbox.policy import Prepared, Sandbox
from lsp_agent.sandbox.sensitive_watch import removal_note
from lsp_agent.tools.spawn import Started, start

log = logging.getLogger(__name__)

_CAPTURE_LIMIT = 4 * 1024 * 1024  # bytes kept in memory per stream before we start dropping

#: `cancel_signal` is set by the agent loop for the generation in flight: when it fires, running
#: processes are killed (whole group) and return what they printed so far, marked `cancelled`.


def scrubbed_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a harness process: allow-listed names only (see sandbox.env)."""
    return command_env(extra)


@dataclass
class ProcessOutcome:
    argv: list[str]
    exit_code: int | None  # None when killed by us
    signal: int | None
    timed_out: bool
    output: str  # stdout and stderr interleaved as they arrived
    output_truncated: bool  # more than the capture limit was produced
    duration_ms: int
    cancelled: bool = False
    #: sensitive paths (tools.sensitive_paths) the command created and the harness removed after it
    removed: list[str] = field(default_factory=list)
    #: the sandbox's own reason when it never ran the program (the exit code is then the sandbox's)
    start_error: str | None = None


async def _pump(stream: asyncio.StreamReader, sink: bytearray, flag: list[bool]) -> None:
    while chunk := await stream.read(65536):
        room = _CAPTURE_LIMIT - len(sink)
        if room > 0:
            sink.extend(chunk[:room])
        if len(chunk) > room:
            flag[0] = True


_PR_SET_PDEATHSIG = 1


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's prctl (Linux), loaded once in the parent, before the first process: the child, between
    fork and exec, only calls it. ctypes is imported here rather than with the module, so a run
    that starts no process never loads it."""
    if os.uname().sysname != "Linux":
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # the interpreter's own libc
    except (OSError, AttributeError):
        return None


#: How long a killed process's pipes may stay open before the run goes on without them.
KILLED_EXIT_WAIT_S = 5.0


def _die_with_parent(parent: int, prctl: Callable[..., int] | None) -> None:
    """preexec_fn (bound to the server's pid): the kernel SIGKILLs the tool process when the server
    dies (even by kill -9), so no tool outlives it. If the server died before the mark was set, the
    child exits at once. Grandchildren are not covered (the sandbox's PID namespace is)."""
    if prctl is None:
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(137)


async def _exited(proc: Started) -> None:
    """Wait for a killed process. `wait()` also waits for its output pipe to close, and a child
    that escaped the group kill (see `run_process`) would hold them open until it ends: past a bound,
    the exit the kernel reported is enough."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(proc.wait()), KILLED_EXIT_WAIT_S)


def _kill_group(proc: Started) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _prepare(argv: list[str], cwd: Path, env: dict[str, str] | None,
             sandbox: Sandbox | None, approved_unsandboxed: bool = False) -> Prepared:
    """What to execute, its environment and what to do once it ended; blocking. Raises
    SandboxRefused / GitConfigRefused."""
    _prctl()  # (the first call loads ctypes: here, in a worker thread, not on the event loop)
    # Any sandboxed command may start git (a test suite, an npm script); rg never does, and a
    # repository whose git is refused (core.worktree) must not take the search down with it.
    name = os.path.basename(argv[0])
    extra = git_env(cwd) if name == "git" or (sandbox is not None and name != "rg") else {}
    if sandbox is not None:
        # Inside bwrap a missing program is bwrap's own exit 1; say it as exec would, before starting.
        search = (env or {}).get("PATH", os.environ.get("PATH"))
        program = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=search)
        if program is None or not os.access(cwd / program, os.X_OK):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
        return sandbox.prepare(harden_argv(argv), cwd, {**(env or {}), **extra},
                               approved_unsandboxed=approved_unsandboxed)
    base = env if env is not None else scrubbed_env()
    return Prepared(harden_argv(argv), {**base, **extra}, sandboxed=False)


#: releases still running (a reference keeps each alive until it is done)
_releasing: set[asyncio.Future[None]] = set()


def _release_soon(release: Callable[[], None]) -> None:
    future = asyncio.get_running_loop().run_in_executor(None, release)
    _releasing.add(future)
    future.add_done_callback(_released)


async def releases_settled() -> None:
    """Wait until every mount point release started so far has finished (shutdown, tests)."""
    while _releasing:
        await asyncio.gather(*list(_releasing), return_exceptions=True)


def _released(future: asyncio.Future[None]) -> None:
    _releasing.discard(future)
    if not future.cancelled() and future.exception() is not None:
        log.warning("releasing a sandbox's mount points failed: %s", future.exception())


async def run_process(argv: list[str], cwd: Path, timeout_s: float,
                      env: dict[str, str] | None = None, sandbox: Sandbox | None = None,
                      approved_unsandboxed: bool = False, stdin: bytes | None = None) -> ProcessOutcome:
    """Run argv; raises FileNotFoundError if the program is missing, SandboxRefused when it may not
    run. With a sandbox, `env` holds only extra variables. `stdin`: bytes written to the program's
    input (default: none, /dev/null). Cancellation kills the group."""
    prepared = await asyncio.to_thread(_prepare, argv, cwd, env, sandbox, approved_unsandboxed)
    try:
        outcome = await _run_prepared(argv, cwd, timeout_s, prepared, stdin)
    finally:
        # Also when cancelled: what the command planted is removed, the sandbox's mount points given
        # back (in the background: the result does not wait for their removal).
        try:
            removed = await asyncio.shield(asyncio.to_thread(prepared.finish))
        finally:
            _release_soon(prepared.release)
    if removed:
        outcome.removed = removed
        outcome.output = f"{outcome.output.rstrip(chr(10))}\n{removal_note(removed)}\n"
    return outcome


async def _run_prepared(argv: list[str], cwd: Path, timeout_s: float, prepared: Prepared,
                        stdin: bytes | None) -> ProcessOutcome:
    started = time.monotonic()
    command, environment = prepared.argv, prepared.env
    cancel = cancel_signal.get()
    if cancel is not None and cancel.is_set():
        # Cancelled while the command was being prepared: start nothing. A sandbox killed in the
        # instant after its start may not yet have tied its own child to its life, and that child,
        # in a session of its own, would outlive the group kill and keep the output pipe open.
        return ProcessOutcome(argv=argv, exit_code=None, signal=None, timed_out=False, output="",
                              output_truncated=False, duration_ms=int((time.monotonic() - started) * 1000),
                              cancelled=True)
    proc = await start(command, cwd, environment, stdin,
                       functools.partial(_die_with_parent, os.getpid(), _prctl()))
    sink = bytearray()
    truncated = [False]
    assert proc.stdout is not None  # piped: the default
    pump = asyncio.ensure_future(_pump(proc.stdout, sink, truncated))
    timed_out = cancelled = False
    try:
        waiter: asyncio.Future[object] = asyncio.ensure_future(proc.wait())
        watchers = {waiter}
        if cancel is not None:
            watchers.add(asyncio.ensure_future(cancel.wait()))
        try:
            done, _ = await asyncio.wait(watchers, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in watchers - {waiter}:
                w.cancel()
        if waiter not in done:
            timed_out = not (cancel is not None and cancel.is_set())
            cancelled = not timed_out
            _kill_group(proc)
            await _exited(proc)
    except asyncio.CancelledError:
        _kill_group(proc)
        with contextlib.suppress(Exception):
            await _exited(proc)
        pump.cancel()
        proc.close()
        raise
    finally:
        # Children that inherited the pipe may keep it open; the group kill ends them.
        if proc.returncode is not None and not pump.done():
            _kill_group(proc)
    with contextlib.suppress(asyncio.CancelledError, TimeoutError):
        await asyncio.wait_for(pump, 2)
    proc.close()
    code = proc.returncode
    sig = -code if code is not None and code < 0 else None
    output = sink.decode("utf-8", errors="replace")
    never_ran = own_failure(code, output) if prepared.sandboxed and not (timed_out or cancelled) else None
    return ProcessOutcome(
        argv=argv,
        exit_code=None if timed_out or cancelled or sig else code,
        signal=sig,
        timed_out=timed_out,
        output=output,
        output_truncated=truncated[0],
        duration_ms=int((time.monotonic() - started) * 1000),
        cancelled=cancelled,
        start_error=never_ran,
    )


def head_tail(text: str, limit: int) -> tuple[str, bool]:
    """Keep the first and last limit/2 characters with a marker between; (text, cut?)."""
    if len(text) <= limit:
        return text, False
    half = limit // 2
    dropped = len(text) - 2 * half
    return f"{text[:half]}\n[... {dropped} characters omitted ...]\n{text[-half:]}", True
