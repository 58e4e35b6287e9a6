"""Where attempts run: this machine (default) or an existing Ray cluster (optional extra).

Both call the same `run_attempt`, so a record does not depend on the executor.
Ray is not a dependency of this package; `--executor ray` imports it on demand.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from typing import Any

from lsp_agent.eval.runner import AttemptJob, AttemptResult, Executor, run_attempt

RAY_MISSING = ("--executor ray needs the optional `ray` package, which is not installed here. "
               "Install it (pip install 'ray[default]') on this machine and on the cluster's workers, "
               "or use --executor local.")


class ExecutorUnavailable(Exception):
    pass


class LocalExecutor:
    """Attempts run on this machine; concurrency comes from the runner's --jobs."""

    name = "local"

    async def run(self, job: AttemptJob, cancel: asyncio.Event) -> AttemptResult:
        return await run_attempt(job, cancel)


def _attempt_blocking(job: AttemptJob) -> AttemptResult:
    # On a Ray worker: its own event loop. Ray's cancel raises KeyboardInterrupt here, which
    # cancels run_attempt, which kills the agent's process tree.
    return asyncio.run(run_attempt(job, asyncio.Event()))


class RayExecutor:
    """Attempts run as Ray tasks on an existing cluster (RAY_ADDRESS, default "auto").

    The workers need the same paths as this machine: the agent command, the oracle and the
    manifest's directory (the oracle's working directory). --jobs bounds attempts in flight.
    Untested in this repository's test suite (Ray is not installed there).
    """

    name = "ray"

    def __init__(self) -> None:
        try:
            self._ray: Any = importlib.import_module("ray")
        except ImportError as exc:
            raise ExecutorUnavailable(RAY_MISSING) from exc
        if not self._ray.is_initialized():
            self._ray.init(address=os.environ.get("RAY_ADDRESS", "auto"))
        self._remote = self._ray.remote(num_cpus=1)(_attempt_blocking)

    async def run(self, job: AttemptJob, cancel: asyncio.Event) -> AttemptResult:
        ref = self._remote.remote(job)
        result = asyncio.wrap_future(ref.future())
        stopper = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait({result, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
        if result.done():
            value: AttemptResult = result.result()
            return value
        # Cancelled: the worker kills the agent's tree; an attempt cut on a worker leaves no line,
        # and the cohort is marked incomplete like a local one.
        self._ray.cancel(ref)
        result.cancel()
        return AttemptResult()


def make_executor(name: str) -> Executor:
    if name == "local":
        return LocalExecutor()
    if name == "ray":
        return RayExecutor()
    raise ExecutorUnavailable(f"unknown executor {name!r}; use local or ray")
