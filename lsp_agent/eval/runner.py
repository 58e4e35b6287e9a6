"""`eval run`: every attempt of a cohort, one NDJSON line each, written the moment it ends.

An attempt: a fresh fixture; the oracle must fail on it (else the task is
invalid); the agent runs once, non-interactively, under the timeout, its
whole process tree killed on timeout or cancel; after it exits on its own the
oracle decides. The clock covers the agent process and the post-run oracle,
not the fixture setup or the first (failing) check.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, Protocol, TextIO

from lsp_agent.domain.events import StopReason
from lsp_agent.eval.fixture import AttemptDir, FixtureError, build_fixture
from lsp_agent.eval.manifest import Arm, ConfigValue, Manifest, Task, flatten_config
from lsp_agent.eval.metrics import MAX_LINE_BYTES, EventMeter, one_line
from lsp_agent.eval.proctree import Finished, run_tree
from lsp_agent.eval.progress import Progress
from lsp_agent.eval.provenance import Build, current_build, host_name, utc_now
from lsp_agent.eval.records import (
    ArmInfo,
    AttemptRecord,
    CohortHeader,
    ExecutorName,
    Incomplete,
    Outcome,
    Resume,
    SamplingInfo,
    TaskInvalid,
)
from lsp_agent.settings.config import Experimental
from lsp_agent.tools.process import scrubbed_env

_STOP_REASONS = {r.value for r in StopReason}
#: In `command`, oracle arguments and arm config strings: the manifest's directory *where the attempt
#: runs* (on a cluster worker, the shipped copy), so a manifest names its scripts without absolute paths.
MANIFEST_DIR = "{manifestDir}"


def default_command() -> tuple[str, ...]:
    """This package's `run`, with the interpreter of the machine the attempt runs on."""
    return (sys.executable, "-m", "lsp_agent", "run")


class EvalError(Exception):
    """The cohort cannot go on (the agent command cannot start, Git is missing, ...)."""


class AttemptLost(Exception):
    """The attempt's machine or worker went away mid-attempt: no verdict, and no fault of the arm."""


def expand(text: str, manifest_dir: str) -> str:
    return text.replace(MANIFEST_DIR, manifest_dir)


# --- one attempt -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AttemptJob:
    """Everything one attempt needs; plain data, so an executor may ship it to another machine."""

    cohort: str
    model: str
    task: Task
    arm: Arm
    repetition: int
    position: int
    command: tuple[str, ...]  # empty: this package's `run` on the machine the attempt runs on
    timeout_ms: int
    oracle_cwd: str  # the manifest's directory; an executor that ships it replaces this with the copy
    keep: bool = False
    #: an agent event line longer than this (bytes, newline excluded) marks the attempt's metrics damaged
    max_event_line_bytes: int = MAX_LINE_BYTES
    executor: ExecutorName = "local"
    #: the driver's build: the attempt is recorded as run by it (a cluster worker of another build refuses)
    build: Build | None = None


@dataclass(frozen=True)
class AttemptResult:
    record: AttemptRecord | None = None  # None: the agent never started (invalid task or cancelled before)
    invalid_reason: str | None = None
    kept: str | None = None
    #: why the attempt did not verify, one line for the operator's stderr (never recorded: it may quote
    #: the agent's error, which can name endpoints)
    reason: str | None = None


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNDECIDED = "undecided"


def _toml_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(value: ConfigValue | dict[str, Any]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):  # an inline table (a list's item)
        return "{" + ", ".join(f"{_toml_string(str(k))} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return _toml_string(value)


def expand_value(value: Any, manifest_dir: str) -> Any:
    """`{manifestDir}` replaced in a setting's strings, also inside its lists and tables."""
    if isinstance(value, str):
        return expand(value, manifest_dir)
    if isinstance(value, list):
        return [expand_value(item, manifest_dir) for item in value]
    if isinstance(value, dict):
        return {key: expand_value(item, manifest_dir) for key, item in value.items()}
    return value


def config_pairs(arm: Arm, manifest_dir: str) -> list[str]:
    """The arm as `--config` values. Every known flag is pinned, so a user config file cannot leak in."""
    pairs = [f"toolProfile={arm.tool_profile}"]
    for flag in Experimental.model_fields:
        pairs.append(f"experimental.{flag}={_toml_value(arm.features.get(flag, False))}")
    for key, number in arm.sampling().items():
        pairs.append(f"sampling.{key}={_toml_value(number)}")
    for key, value in flatten_config(arm.config).items():
        pairs.append(f"{key}={_toml_value(expand_value(value, manifest_dir))}")
    return pairs


def agent_argv(job: AttemptJob, workspace: Path) -> list[str]:
    command = [expand(part, job.oracle_cwd) for part in job.command] or list(default_command())
    argv = [*command, "--workspace", str(workspace), "--model", job.model, "--json"]
    for pair in config_pairs(job.arm, job.oracle_cwd):
        argv += ["--config", pair]
    return [*argv, "--", job.task.prompt]  # `--`: a prompt starting with '-' stays a prompt


#: How much of the end of an oracle's output is read to tell a crash from a verdict.
_CRASH_TAIL_BYTES = 64 * 1024
_TRACEBACK = "Traceback (most recent call last):"
#: The last line of a Python traceback: the exception's (dotted) name, then optionally its message.
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(: .*)?$")


def _output_since(log: Path, offset: int) -> str:
    try:
        with log.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(offset, size - _CRASH_TAIL_BYTES))
            return handle.read(_CRASH_TAIL_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def crash_of(output: str) -> str | None:
    """The exception an oracle died of, when its output *ends* with a Python traceback.

    Python exits 1 on an uncaught exception, which would read as "not done": a crash of the checker
    (it could not copy a FIFO, say) is not the agent's failure. An AssertionError is a failing
    check, not a crash; a traceback followed by more output (a test runner's report of a test that
    raised) is the checker reporting a failure, so only a traceback that is the last thing printed counts.
    """
    lines = output.rstrip().splitlines()
    if not lines:
        return None
    start = max((i for i, line in enumerate(lines) if line.startswith(_TRACEBACK)), default=-1)
    if start < 0:
        return None
    body = lines[start + 1:]
    unindented = [i for i, line in enumerate(body) if line and not line[0].isspace()]
    if len(unindented) != 1 or unindented[0] != len(body) - 1:
        return None
    found = _EXCEPTION_LINE.match(body[-1])
    if found is None or found.group(1).rsplit(".", 1)[-1] == "AssertionError":
        return None
    return one_line(body[-1], 200)


async def run_oracle(task: Task, attempt: AttemptDir, cwd: str, timeout_ms: int,
                     cancel: asyncio.Event | None) -> tuple[Verdict, Finished, str]:
    """Exit 0 passes, 1 fails, anything else (another code, a signal, a timeout, a crash) decides nothing."""
    argv = [expand(part, cwd) for part in task.oracle]
    log = attempt.base / "oracle.log"
    offset = log.stat().st_size if log.exists() else 0
    done = await run_tree([*argv, str(attempt.work)], Path(cwd), scrubbed_env(), timeout_ms / 1000,
                          cancel, log_to=log)
    if done.spawn_error:
        return Verdict.UNDECIDED, done, f"could not start ({done.spawn_error})"
    if done.timed_out:
        return Verdict.UNDECIDED, done, f"timed out after {timeout_ms} ms"
    if done.exit_code == 0:
        return Verdict.PASS, done, "exited 0"
    if done.exit_code == 1:
        crash = crash_of(await asyncio.to_thread(_output_since, log, offset))
        if crash is not None:
            return Verdict.UNDECIDED, done, f"crashed ({crash})"
        return Verdict.FAIL, done, "exited 1"
    if done.exit_code is None:
        return Verdict.UNDECIDED, done, "was killed by a signal"
    return Verdict.UNDECIDED, done, f"exited {done.exit_code}"


def _agent_env(attempt: AttemptDir) -> dict[str, str]:
    # The agent needs the operator's environment (provider keys), but its own state dir so
    # attempts share nothing and nothing lands in the operator's store.
    return {**os.environ, "LSP_AGENT_STATE_DIR": str(attempt.state), "PYTHONUNBUFFERED": "1"}


async def run_attempt(job: AttemptJob, cancel: asyncio.Event) -> AttemptResult:
    started_at = utc_now()
    try:
        attempt = await asyncio.to_thread(build_fixture, job.task, job.task.id)
    except FixtureError as exc:
        raise EvalError(f"task {job.task.id}: {exc}") from exc
    try:
        verdict, first, why = await run_oracle(job.task, attempt, job.oracle_cwd, job.timeout_ms, cancel)
        if first.cancelled or cancel.is_set():
            return AttemptResult()
        if verdict is not Verdict.FAIL:
            return AttemptResult(invalid_reason=f"the oracle {why} on the fresh fixture of repetition "
                                                f"{job.repetition}, arm {job.arm.name}; it must exit 1")
        meter = EventMeter(job.max_event_line_bytes)
        agent = await run_tree(agent_argv(job, attempt.work), attempt.work, _agent_env(attempt),
                               job.timeout_ms / 1000, cancel, on_stdout=meter.feed, log_to=attempt.agent_log)
        meter.close()
        if agent.spawn_error:
            raise EvalError(f"the agent command cannot start: {agent.spawn_error}")
        record, reason = await _finish(job, attempt, agent, meter, cancel, started_at)
        return AttemptResult(record=record, kept=str(attempt.base) if job.keep else None, reason=reason)
    finally:
        if not job.keep:
            await asyncio.to_thread(attempt.remove)


def _failure_reason(outcome: Outcome, job: AttemptJob, agent: Finished, meter: EventMeter, oracle: str) -> str | None:
    """Why an attempt did not verify, in words: the agent's own error first, it is usually the cause."""
    if outcome in (Outcome.VERIFIED, Outcome.CANCELLED):
        return None
    if outcome is Outcome.TIMEOUT:
        return f"the agent ran out of its {job.timeout_ms} ms and was killed"
    ran = f"the agent exited {agent.exit_code}" if agent.exit_code is not None else "the agent was killed"
    if meter.error:
        ran += f" with an error: {meter.error}"
    elif meter.stop_reason:
        ran += f" (stop reason {meter.stop_reason})"
    if outcome is Outcome.COMPLETED_UNVERIFIED:
        return f"{ran}; the oracle could not decide: it {oracle}"
    return f"{ran}; the oracle {oracle}: the task is not done"


async def _finish(job: AttemptJob, attempt: AttemptDir, agent: Finished, meter: EventMeter,
                  cancel: asyncio.Event, started_at: str) -> tuple[AttemptRecord, str | None]:
    elapsed, verification_ms, oracle = agent.duration_ms, None, ""
    if agent.timed_out:
        outcome = Outcome.TIMEOUT
    elif agent.cancelled:
        outcome = Outcome.CANCELLED
    else:
        verdict, check, oracle = await run_oracle(job.task, attempt, job.oracle_cwd, job.timeout_ms, cancel)
        elapsed += check.duration_ms
        if check.cancelled:
            outcome = Outcome.CANCELLED
        else:
            verification_ms = check.duration_ms
            outcome = {Verdict.PASS: Outcome.VERIFIED, Verdict.FAIL: Outcome.FAILED,
                       Verdict.UNDECIDED: Outcome.COMPLETED_UNVERIFIED}[verdict]
    status, metrics, issue = meter.result(interrupted=agent.timed_out or agent.cancelled or agent.output_cut)
    build = job.build or current_build()
    record = AttemptRecord(
        cohort=job.cohort, model=job.model, task=job.task.id, repetition=job.repetition, arm=job.arm.name,
        position=0 if job.position == 0 else 1, outcome=outcome, elapsed_ms=elapsed,
        verification_ms=verification_ms, exit_code=agent.exit_code,
        stop_reason=meter.stop_reason if meter.stop_reason in _STOP_REASONS else None,
        metrics_status=status, metrics=metrics, metrics_issue=issue,
        harness_verification=_claim(meter.verification),
        started_at=started_at, executor=job.executor, host=host_name(), agent_version=build.version,
        agent_commit=build.commit, sampling=SamplingInfo(temperature=job.arm.temperature, seed=job.arm.seed,
                                                         max_output_tokens=job.arm.max_output_tokens),
        server_model=meter.server_model)
    return record, _failure_reason(outcome, job, agent, meter, oracle)


_CLAIMS: dict[str, Literal["verified", "failed", "not_run"]] = {
    "verified": "verified", "failed": "failed", "not_run": "not_run"}


def _claim(value: str | None) -> Literal["verified", "failed", "not_run"] | None:
    return _CLAIMS.get(value) if value is not None else None


async def check_task(task: Task, oracle_cwd: str, timeout_ms: int, cancel: asyncio.Event) -> str | None:
    """None when the oracle fails (exit 1) on a fresh fixture, else why the task is invalid."""
    try:
        attempt = await asyncio.to_thread(build_fixture, task, task.id)
    except FixtureError as exc:
        raise EvalError(f"task {task.id}: {exc}") from exc
    try:
        verdict, done, why = await run_oracle(task, attempt, oracle_cwd, timeout_ms, cancel)
    finally:
        await asyncio.to_thread(attempt.remove)
    if done.cancelled or verdict is Verdict.FAIL:
        return None
    return f"the oracle {why} on the fresh fixture; it must exit 1 before the agent runs"


# --- the cohort ------------------------------------------------------------------------------


class Executor(Protocol):
    """Runs one attempt somewhere; the records are the same wherever that is.

    `run` raises AttemptLost when the machine running the attempt went away, EvalError when the
    cohort cannot go on.
    """

    name: str

    async def start(self, manifest_dir: Path) -> None: ...

    async def check(self, task: Task, oracle_cwd: str, timeout_ms: int, cancel: asyncio.Event) -> str | None: ...

    async def run(self, job: AttemptJob, cancel: asyncio.Event) -> AttemptResult: ...


AttemptKey = tuple[str, int, str]  # task, repetition, arm


def plan(manifest: Manifest, cohort: str, oracle_cwd: str, keep: bool = False,
         max_event_line_bytes: int = MAX_LINE_BYTES, executor: ExecutorName = "local") -> list[AttemptJob]:
    """Repetition by repetition, task by task; the arm that goes first alternates between repetitions."""
    command = tuple(manifest.command) if manifest.command else ()
    jobs = []
    for repetition in range(1, manifest.repetitions + 1):
        arms = manifest.arms if repetition % 2 == 1 else list(reversed(manifest.arms))
        for task in manifest.tasks:
            for position, arm in enumerate(arms):
                jobs.append(AttemptJob(cohort=cohort, model=manifest.model, task=task, arm=arm,
                                       repetition=repetition, position=position, command=command,
                                       timeout_ms=manifest.timeout_ms, oracle_cwd=oracle_cwd, keep=keep,
                                       max_event_line_bytes=max_event_line_bytes, executor=executor,
                                       build=current_build()))
    return jobs


def header(manifest: Manifest, cohort: str) -> CohortHeader:
    return CohortHeader(
        cohort=cohort, model=manifest.model, runtime_revision=manifest.runtime_revision,
        arms=[ArmInfo(name=a.name, features=dict(a.features), tool_profile=a.tool_profile) for a in manifest.arms],
        tasks=[t.id for t in manifest.tasks], repetitions=manifest.repetitions, timeout_ms=manifest.timeout_ms,
        attempts=len(manifest.tasks) * manifest.repetitions * 2, primary_metric=manifest.primary_metric)


@dataclass(frozen=True)
class Earlier:
    """What an earlier run of the same cohort already recorded (for `eval run --resume`)."""

    done: frozenset[AttemptKey] = frozenset()
    invalid: dict[str, str] = field(default_factory=dict)


@dataclass
class CohortResult:
    cohort: str
    planned: int
    recorded: int = 0
    lost: int = 0
    invalid: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    error: str | None = None

    @property
    def exit_code(self) -> int:
        """0 complete; 1 interrupted, aborted or attempts lost; 3 complete but some tasks invalid."""
        if self.interrupted or self.error or self.lost:
            return 1
        return 3 if self.invalid else 0


class CohortRunner:
    def __init__(self, manifest: Manifest, oracle_cwd: Path, out: TextIO, err: TextIO, executor: Executor,
                 jobs: int = 1, keep: bool = False, earlier: Earlier | None = None,
                 progress: Progress | None = None, max_event_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.manifest = manifest
        self.cohort = manifest.cohort()
        self.manifest_dir = oracle_cwd.resolve()
        self.oracle_cwd = str(self.manifest_dir)
        self.out = out
        self.executor = executor
        self.jobs = max(1, jobs)
        self.keep = keep
        self.max_event_line_bytes = max_event_line_bytes
        self.earlier = earlier
        self.progress = progress or Progress(err, [a.name for a in manifest.arms], live=False)
        self.result = CohortResult(self.cohort, planned=len(manifest.tasks) * manifest.repetitions * 2)
        self.result.invalid.update(earlier.invalid if earlier else {})
        self._total = 0
        self._per_task: dict[str, int] = {}  # attempts of each task this run sets out to record
        self._by_task: dict[str, int] = {}

    def _write(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def _invalidate(self, task: str, reason: str) -> None:
        if task in self.result.invalid:
            return
        self.result.invalid[task] = reason
        self._write(TaskInvalid(cohort=self.cohort, task=task, reason=reason).line())
        self.progress.say(f"task {task} is INVALID: {reason}; its attempts are skipped")

    async def run(self, stop: asyncio.Event) -> CohortResult:
        done = self.earlier.done if self.earlier else frozenset()
        executor: ExecutorName = "ray" if self.executor.name == "ray" else "local"
        queue = deque(j for j in plan(self.manifest, self.cohort, self.oracle_cwd, self.keep,
                                          self.max_event_line_bytes, executor)
                      if (j.task.id, j.repetition, j.arm.name) not in done and j.task.id not in self.result.invalid)
        for job in queue:
            self._per_task[job.task.id] = self._per_task.get(job.task.id, 0) + 1
        if self.earlier is None:
            self._write(header(self.manifest, self.cohort).line())
        else:
            self._write(Resume(cohort=self.cohort, missing=len(queue)).line())
        self.progress.say(f"cohort {self.cohort[:12]} · {len(self.manifest.tasks)} task(s) x "
                          f"{self.manifest.repetitions} repetition(s) x 2 arms · executor {self.executor.name}, "
                          f"{self.jobs} job(s)" + (f" · resuming {len(queue)} missing attempt(s)"
                                                   if self.earlier else ""))
        try:
            await self.executor.start(self.manifest_dir)
        except EvalError as exc:
            self.result.error = str(exc)
            stop.set()
        gate = asyncio.Semaphore(self.jobs)
        pending = [t for t in self.manifest.tasks if any(j.task.id == t.id for j in queue)]
        if not stop.is_set():
            await self._all(stop, *(self._check(task, gate, stop) for task in pending))
        self._total = sum(1 for j in queue if j.task.id not in self.result.invalid)
        self.progress.begin(self._total)
        if not stop.is_set():
            await self._all(stop, *(self._worker(queue, stop) for _ in range(self.jobs)))
        self.progress.end()
        missing = self._total - self.result.recorded
        if self.result.lost or (stop.is_set() and (missing > 0 or self.result.interrupted)):
            self.result.interrupted = self.result.interrupted or stop.is_set()
            reason: Literal["cancelled", "error", "lost"] = (
                "error" if self.result.error else "cancelled" if stop.is_set() else "lost")
            self._write(Incomplete(cohort=self.cohort, reason=reason, recorded=self.result.recorded,
                                   planned=self._total).line())
            lost = f", {self.result.lost} lost with their worker" if self.result.lost else ""
            self.progress.say(f"INCOMPLETE ({reason}{': ' + self.result.error if self.result.error else ''}): "
                              f"{self.result.recorded} of {self._total} attempts recorded{lost}; run "
                              "`eval run MANIFEST --resume RUNS` to add the missing ones")
        else:
            self.progress.say(f"cohort {self.cohort[:12]} complete: {self.result.recorded} attempts recorded"
                              + (f", {len(self.result.invalid)} task(s) invalid" if self.result.invalid else ""))
        return self.result

    async def _all(self, stop: asyncio.Event, *work: Coroutine[Any, Any, None]) -> None:
        """Run to the end; the first EvalError stops the rest (they wind down through `stop`)."""
        for outcome in await asyncio.gather(*work, return_exceptions=True):
            if isinstance(outcome, EvalError):
                self.result.error = self.result.error or str(outcome)
                stop.set()
            elif isinstance(outcome, BaseException):
                raise outcome

    async def _check(self, task: Task, gate: asyncio.Semaphore, stop: asyncio.Event) -> None:
        async with gate:
            if stop.is_set():
                return
            try:
                reason = await self.executor.check(task, self.oracle_cwd, self.manifest.timeout_ms, stop)
            except EvalError:
                stop.set()
                raise
            except AttemptLost as exc:
                reason = None  # each attempt checks its own fresh fixture again
                self.progress.say(f"the check of task {task.id} was lost ({exc}); its attempts check again")
            if reason is not None:
                self._invalidate(task.id, reason)

    async def _worker(self, queue: deque[AttemptJob], stop: asyncio.Event) -> None:
        while queue and not stop.is_set():
            job = queue.popleft()
            if job.task.id in self.result.invalid:
                continue
            try:
                result = await self.executor.run(job, stop)
            except EvalError:
                stop.set()
                raise
            except AttemptLost as exc:
                self.result.lost += 1
                self.progress.say(f"attempt LOST · task {job.task.id} rep {job.repetition} arm {job.arm.name}: "
                                  f"{exc}; not recorded (no verdict), the cohort will be incomplete")
                continue
            if result.invalid_reason is not None and job.task.id not in self.result.invalid:
                self._invalidate(job.task.id, result.invalid_reason)
                # Its attempts that were not recorded will never be; late in-flight ones add back.
                self._total -= self._per_task.get(job.task.id, 0) - self._by_task.get(job.task.id, 0)
                self.progress.retotal(self._total)
            elif result.record is not None:
                self._record(result)

    def _record(self, result: AttemptResult) -> None:
        record = result.record
        assert record is not None
        self._write(record.line())
        self.result.recorded += 1
        self._by_task[record.task] = self._by_task.get(record.task, 0) + 1
        if record.task in self.result.invalid:
            self._total += 1
            self.progress.retotal(self._total)
        if record.outcome is Outcome.CANCELLED:
            self.result.interrupted = True
        self.progress.attempt(record, result.kept, result.reason)
