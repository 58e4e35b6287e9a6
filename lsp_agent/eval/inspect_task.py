"""lsp-agent as an Inspect AI task: a manifest's tasks as the dataset, the task's oracle as the scorer.

One arm of an eval manifest runs under Inspect's `eval()`: each sample is one attempt on a fresh
fixture, exactly as `eval run` builds it (the oracle must fail on it first, else the sample errors
as an invalid task); the solver runs the agent headless (`lsp-agent run`, or the manifest's
`command`) with the arm's settings, its whole process tree killed on the manifest's timeout or when
Inspect cancels the sample; the scorer then runs the task's oracle on the fixture the agent left.
The agent talks to the manifest's model itself; Inspect's own model is not used ("none").

    from inspect_ai import eval
    from lsp_agent.eval.inspect_task import lsp_agent_task
    eval(lsp_agent_task("experiment.json", arm="baseline"), max_samples=1)
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from lsp_agent.domain.events import StopReason
from lsp_agent.eval.fixture import AttemptDir, FixtureError, build_fixture
from lsp_agent.eval.inspect_extra import InspectMissing
from lsp_agent.eval.inspect_scores import HARNESS_SCORER, ORACLE_SCORER, agrees, claim_score, oracle_score
from lsp_agent.eval.manifest import Manifest, ManifestError, Task, load_manifest
from lsp_agent.eval.metrics import EventMeter
from lsp_agent.eval.proctree import run_tree
from lsp_agent.eval.records import Outcome
from lsp_agent.eval.runner import AttemptJob, Verdict, agent_argv, run_oracle

try:
    from inspect_ai import Task as InspectTask
    from inspect_ai import task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
    from inspect_ai.solver import Generate, Solver, TaskState, solver
except ImportError as exc:  # the optional extra
    raise InspectMissing(exc) from exc

#: The sample store key where the solver leaves the attempt for the scorer.
ATTEMPT_KEY = "lsp_agent_attempt"


class InvalidTask(Exception):
    """The oracle does not fail on the untouched fixture, so it could not tell a fix from no fix."""


def _load(manifest: str, model: str | None) -> tuple[Manifest, Path]:
    path = Path(manifest)
    try:
        return load_manifest(path, model=model), path.resolve().parent
    except ManifestError as exc:
        raise ValueError(str(exc)) from exc


@task
def lsp_agent_eval(manifest: str, arm: str | None = None, model: str | None = None) -> InspectTask:
    """One arm (default: the first) of an eval manifest; epochs default to its repetitions."""
    loaded, manifest_dir = _load(manifest, model)
    names = [a.name for a in loaded.arms]
    chosen = arm if arm is not None else names[0]
    if chosen not in names:
        raise ValueError(f"unknown arm {chosen!r}: the manifest has arms {', '.join(names)}")
    dataset = [Sample(id=t.id, input=t.prompt, target="", metadata={"task": t.id}) for t in loaded.tasks]
    return InspectTask(
        dataset=dataset,
        solver=lsp_agent_attempt(manifest, chosen, model),
        scorer=[task_oracle(manifest, model), harness_claim()],
        cleanup=_remove_fixture,
        epochs=loaded.repetitions,
        model="none",
        name=f"lsp_agent_eval_{chosen}",
        metadata={"cohort": loaded.cohort(), "model": loaded.model, "arm": chosen,
                  "runtimeRevision": loaded.runtime_revision, "manifestDir": str(manifest_dir)},
    )


def lsp_agent_task(manifest: str | Path, arm: str | None = None, model: str | None = None) -> InspectTask:
    """`lsp_agent_eval` for Python callers who hold a Path."""
    return lsp_agent_eval(str(manifest), arm=arm, model=model)


@solver
def lsp_agent_attempt(manifest: str, arm: str, model: str | None = None) -> Solver:
    """Build the sample's fresh fixture, check that its oracle fails there, run the agent once on it."""
    loaded, manifest_dir = _load(manifest, model)
    the_arm = next(a for a in loaded.arms if a.name == arm)
    tasks = {t.id: t for t in loaded.tasks}
    command = tuple(loaded.command) if loaded.command else ()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        job = AttemptJob(cohort=loaded.cohort(), model=loaded.model, task=tasks[str(state.sample_id)],
                         arm=the_arm, repetition=state.epoch, position=0, command=command,
                         timeout_ms=loaded.timeout_ms, oracle_cwd=str(manifest_dir))
        attempt = await _fresh_fixture(job)
        state.store.set(ATTEMPT_KEY, {"dir": str(attempt.base)})
        meter = EventMeter(job.max_event_line_bytes)
        # The agent's own state dir, so samples share nothing and nothing lands in the operator's store.
        env = {**os.environ, "LSP_AGENT_STATE_DIR": str(attempt.state), "PYTHONUNBUFFERED": "1"}
        done = await run_tree(agent_argv(job, attempt.work), attempt.work, env, job.timeout_ms / 1000,
                              on_stdout=meter.feed, log_to=attempt.agent_log)
        meter.close()
        if done.spawn_error:
            raise RuntimeError(f"the agent command cannot start: {done.spawn_error}")
        # like the records: only a stop reason the harness defines, never free text from the stream
        stop_reason = meter.stop_reason if meter.stop_reason in {r.value for r in StopReason} else None
        status, metrics, issue = meter.result(interrupted=done.timed_out or done.output_cut)
        state.store.set(ATTEMPT_KEY, {
            "dir": str(attempt.base), "timedOut": done.timed_out, "agentMs": done.duration_ms,
            "exitCode": done.exit_code, "stopReason": stop_reason, "metricsStatus": status.value,
            "metrics": metrics.model_dump(mode="json") if metrics is not None else None,
            "metricsIssue": issue.value if issue is not None else None, "harnessVerification": meter.verification})
        state.output.completion = f"lsp-agent stopped: {stop_reason or 'no stop reason'}"
        state.completed = True
        return state

    return solve


async def _fresh_fixture(job: AttemptJob) -> AttemptDir:
    try:
        attempt = await asyncio.to_thread(build_fixture, job.task, job.task.id)
    except FixtureError as exc:
        raise RuntimeError(f"task {job.task.id}: {exc}") from exc
    try:
        verdict, _, why = await run_oracle(job.task, attempt, job.oracle_cwd, job.timeout_ms, None)
    except BaseException:
        attempt.remove()  # not awaited: a cancelled task must not wait for anything more
        raise
    if verdict is not Verdict.FAIL:
        await asyncio.to_thread(attempt.remove)
        raise InvalidTask(f"task {job.task.id} is invalid: the oracle {why} on the fresh fixture; it must exit 1 "
                          "before the agent runs")
    return attempt


_OUTCOME = {Verdict.PASS: Outcome.VERIFIED, Verdict.FAIL: Outcome.FAILED,
            Verdict.UNDECIDED: Outcome.COMPLETED_UNVERIFIED}


@scorer(name=ORACLE_SCORER, metrics=[accuracy(), stderr()])
def task_oracle(manifest: str, model: str | None = None) -> Scorer:
    """The task's oracle on the fixture the agent left: exit 0 done, 1 not done, else undecided."""
    loaded, manifest_dir = _load(manifest, model)
    tasks = {t.id: t for t in loaded.tasks}

    async def score(state: TaskState, target: Target) -> Score:
        attempt: dict[str, Any] = state.store.get(ATTEMPT_KEY, {})
        if "dir" not in attempt:
            raise RuntimeError("the oracle scorer needs the lsp_agent_attempt solver to run first")
        base = AttemptDir(Path(attempt["dir"]))
        try:
            verification_ms: int | None = None
            if "timedOut" not in attempt:  # Inspect's own limit (time_limit, ...) ended the solver: like a timeout
                outcome, why = Outcome.TIMEOUT, "Inspect's limit ended the sample first"
            elif attempt["timedOut"]:
                outcome, why = Outcome.TIMEOUT, None
            else:
                outcome, why, verification_ms = await _judge(tasks[str(state.sample_id)], base, str(manifest_dir),
                                                             loaded.timeout_ms)
        finally:
            await asyncio.to_thread(base.remove)
        result = oracle_score(outcome, why)
        result.metadata = {**{k: v for k, v in attempt.items() if k != "dir"}, "outcome": outcome.value,
                           "verificationMs": verification_ms, "model": loaded.model}
        claim = attempt.get("harnessVerification")
        if isinstance(claim, str):
            result.metadata["harnessAgreesWithOracle"] = agrees(claim, outcome)
        return result

    return score


@scorer(name=HARNESS_SCORER, metrics=[accuracy()])
def harness_claim() -> Scorer:
    """The harness's own verification at the end of its run, scored beside the oracle (not instead of it)."""

    async def score(state: TaskState, target: Target) -> Score:
        attempt: dict[str, Any] = state.store.get(ATTEMPT_KEY, {})
        claim = attempt.get("harnessVerification")
        return claim_score(claim if isinstance(claim, str) else None)

    return score


async def _judge(task: Task, attempt: AttemptDir, cwd: str, timeout_ms: int) -> tuple[Outcome, str | None, int]:
    """The outcome, why the oracle could not decide (if so), and how long it took."""
    verdict, done, why = await run_oracle(task, attempt, cwd, timeout_ms, None)
    return _OUTCOME[verdict], f"the oracle {why}" if verdict is Verdict.UNDECIDED else None, done.duration_ms


async def _remove_fixture(state: TaskState) -> None:
    """A sample that errored or was cancelled between solver and scorer still leaves no temp dir."""
    attempt: dict[str, Any] = state.store.get(ATTEMPT_KEY, {})
    if "dir" in attempt:
        await asyncio.to_thread(AttemptDir(Path(attempt["dir"])).remove)
