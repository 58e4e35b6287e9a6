"""Where attempts run: this machine (default) or a Ray cluster (the optional `ray` extra).

Both call the same `run_attempt`, so a record does not depend on the executor.
Ray is not a dependency of this package; `--executor ray` imports it on demand.

On a cluster nothing is assumed shared but the installed package: the manifest's
directory (oracles, scripts) is packed and shipped once, unpacked once per
worker machine, and `{manifestDir}` and the oracle's working directory point at
that copy; the agent is the worker's own `python -m lsp_agent run` unless the
manifest names a `command`. The agent's environment (provider keys) is the
worker's, i.e. that of the `ray start` which started the worker's node.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lsp_agent.eval.bundle import Bundle, BundleError, pack, unpack
from lsp_agent.eval.manifest import Task
from lsp_agent.eval.provenance import Build, current_build, host_name
from lsp_agent.eval.runner import AttemptJob, AttemptLost, AttemptResult, EvalError, Executor, check_task, run_attempt

RAY_MISSING = ("--executor ray needs the optional `ray` package, which is not installed here. "
               "Install it (pip install 'lsp-agent[ray]') on this machine and on the cluster's nodes, "
               "or use --executor local.")
#: After a cancel, how long to wait for the worker to confirm the attempt's tree is gone.
CANCEL_GRACE_S = 20.0


class ExecutorUnavailable(Exception):
    pass


class LocalExecutor:
    """Attempts run on this machine; concurrency comes from the runner's --jobs."""

    name = "local"

    async def start(self, manifest_dir: Path) -> None:
        return None

    async def check(self, task: Task, oracle_cwd: str, timeout_ms: int, cancel: asyncio.Event) -> str | None:
        return await check_task(task, oracle_cwd, timeout_ms, cancel)

    async def run(self, job: AttemptJob, cancel: asyncio.Event) -> AttemptResult:
        return await run_attempt(job, cancel)


# --- on a Ray worker ---------------------------------------------------------------------------


#: How often a worker's event loop wakes up to notice Ray's cancel.
_WAKE_S = 0.2


async def _wake_up() -> None:
    # Ray's cancel only sets Python's interrupt flag, without a signal; a loop asleep in epoll
    # would not see it until its next timer (minutes away during an agent run).
    while True:  # noqa: ASYNC110 - the point is to wake up, not to wait for an event
        await asyncio.sleep(_WAKE_S)


@contextlib.contextmanager
def _interrupts_ignored() -> Iterator[None]:
    """Ray repeats its cancel while the task still runs, each time as another interrupt: one landing
    in the middle of the tree kill (between stopping the agent's processes and killing them) would
    leave them stopped and alive for good. The cleanup is short and bounded, so it runs with further
    interrupts ignored (Ray's interrupt is Python's SIGINT handling: SIG_IGN turns it off)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread receives interrupts (and may change their handling)
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _on_worker(work: Any) -> Any:
    """Run a coroutine to its end; Ray's cancel (a KeyboardInterrupt here) cancels it first.

    Cancelling the coroutine is what kills the agent's process tree (run_tree), so the interrupt
    must not simply unwind this frame and leave the tree running.
    """
    loop = asyncio.new_event_loop()
    main = loop.create_task(work)
    waker = loop.create_task(_wake_up())
    main.add_done_callback(lambda _: waker.cancel())
    try:
        try:
            return loop.run_until_complete(main)
        except KeyboardInterrupt:
            main.cancel()
            with _interrupts_ignored(), contextlib.suppress(asyncio.CancelledError, KeyboardInterrupt):
                loop.run_until_complete(main)
            raise
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def refuse_other_build(driver: Build) -> None:
    """A worker of another lsp-agent build would record attempts under the driver's name: refuse
    before anything of the attempt runs (an EvalError stops the whole cohort)."""
    mine = current_build()
    if mine != driver:
        raise EvalError(f"the Ray worker on {host_name()} runs {mine.describe()}, but this eval run "
                        f"(the driver) runs {driver.describe()}; install the same build on every node")


def _ray_attempt(job: AttemptJob, bundle: Bundle) -> AttemptResult:
    refuse_other_build(job.build or Build("unknown", None))
    here = str(unpack(bundle))
    return _on_worker(run_attempt(replace(job, oracle_cwd=here), asyncio.Event()))  # type: ignore[no-any-return]


def _ray_check(task: Task, timeout_ms: int, bundle: Bundle, driver: Build) -> str | None:
    refuse_other_build(driver)
    here = str(unpack(bundle))
    return _on_worker(check_task(task, here, timeout_ms, asyncio.Event()))  # type: ignore[no-any-return]


# --- on the submitting machine -----------------------------------------------------------------


def _loopback_host(address: str) -> str | None:
    host = urlsplit(address if "://" in address else f"ray://{address}").hostname or ""
    return host if host.startswith("127.") else None


class RayExecutor:
    """Attempts run as Ray tasks (one CPU each, spread over the nodes, never retried by Ray).

    --jobs bounds attempts in flight. RAY_ADDRESS names the cluster (default "auto").
    """

    name = "ray"

    def __init__(self, address: str | None = None) -> None:
        try:
            self._ray: Any = importlib.import_module("ray")
        except ImportError as exc:
            raise ExecutorUnavailable(RAY_MISSING) from exc
        address = address or os.environ.get("RAY_ADDRESS") or "auto"
        options: dict[str, Any] = {"address": address, "log_to_driver": False, "logging_level": "WARNING"}
        if (host := _loopback_host(address)) is not None:
            # A cluster on this machine's loopback: be a node of it there, not at the outward IP.
            options["_node_ip_address"] = host
        if not self._ray.is_initialized():
            try:
                self._ray.init(**options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ExecutorUnavailable(f"cannot connect to the Ray cluster at {address}: {exc}") from exc
        # A retry would re-run an attempt behind the runner's back; a lost attempt is re-run by --resume.
        remote = self._ray.remote(num_cpus=1, max_retries=0, scheduling_strategy="SPREAD")
        self._attempt = remote(_ray_attempt)
        self._check = remote(_ray_check)
        self._bundle: Any = None

    async def start(self, manifest_dir: Path) -> None:
        try:
            bundle = await asyncio.to_thread(pack, manifest_dir)
        except BundleError as exc:
            raise EvalError(str(exc)) from exc
        self._bundle = self._ray.put(bundle)  # shipped to each node once, not once per attempt

    async def check(self, task: Task, oracle_cwd: str, timeout_ms: int, cancel: asyncio.Event) -> str | None:
        ref = self._check.remote(task, timeout_ms, self._bundle, current_build())
        value: str | None = await self._await(ref, cancel)
        return value

    async def run(self, job: AttemptJob, cancel: asyncio.Event) -> AttemptResult:
        value: AttemptResult | None = await self._await(self._attempt.remote(job, self._bundle), cancel)
        # Cancelled: the worker killed the agent's tree; an attempt cut on a worker leaves no line,
        # and the cohort is marked incomplete like a local one.
        return value if value is not None else AttemptResult()

    async def _await(self, ref: Any, cancel: asyncio.Event) -> Any:
        result = asyncio.wrap_future(ref.future())
        stopper = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait({result, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
        if not result.done():
            self._ray.cancel(ref)  # a KeyboardInterrupt in the task: it kills the tree, then ends
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(result), CANCEL_GRACE_S)
            return None
        return self._unwrap(result)

    def _unwrap(self, result: asyncio.Future[Any]) -> Any:
        errors = self._ray.exceptions
        try:
            return result.result()
        except errors.TaskCancelledError:
            return None
        except errors.RayTaskError as exc:  # raised by our own code on the worker
            cause = getattr(exc, "cause", None)
            if isinstance(cause, KeyboardInterrupt | errors.TaskCancelledError):
                return None
            raise EvalError(str(cause) if isinstance(cause, EvalError) else f"an attempt failed on a worker: "
                            f"{type(cause).__name__}: {cause}") from exc
        except errors.RayError as exc:  # the worker process or its node went away
            raise AttemptLost(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc


def make_executor(name: str) -> Executor:
    if name == "local":
        return LocalExecutor()
    if name == "ray":
        return RayExecutor()
    raise ExecutorUnavailable(f"unknown executor {name!r}; use local or ray")
