"""`eval export-inspect`: a records file as Inspect AI logs, one per cohort and arm.

Written with Inspect's own types and writer, so its viewer and `read_eval_log` open them. A sample
is one attempt: the task is the sample id, the repetition its epoch, the oracle's verdict its
score (and the harness's own claim a second score, where the record has it). The records carry no
prompts, so neither do the logs. The same records always give the same files: ids derive from the
cohort, and a log's creation time is the earliest recorded attempt start (or, for records without
start times, the records file's modification time).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from lsp_agent.eval.compare import CompareError, Runs, load_runs
from lsp_agent.eval.inspect_extra import InspectMissing
from lsp_agent.eval.inspect_scores import (
    HARNESS_SCORER,
    ORACLE_SCORER,
    claim_score,
    harness_score,
    oracle_score,
    score_metrics,
)
from lsp_agent.eval.records import AttemptRecord, CohortHeader

try:
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalError,
        EvalLog,
        EvalMetric,
        EvalPlan,
        EvalPlanStep,
        EvalResults,
        EvalSample,
        EvalScore,
        EvalSpec,
        EvalStats,
        write_eval_log,
    )
    from inspect_ai.model import ModelUsage
    from inspect_ai.scorer import SampleScore, Score
except ImportError as exc:  # the optional extra
    raise InspectMissing(exc) from exc

LOG_SUFFIX = ".eval"


class ExportError(Exception):
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:25]
        more = f"\n  ... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        super().__init__("cannot export:\n" + "\n".join(f"  - {p}" for p in shown) + more)


@dataclass(frozen=True)
class ExportedLog:
    path: Path
    cohort: str
    arm: str
    samples: int


def export_runs(runs_path: Path, out_dir: Path) -> list[ExportedLog]:
    """Write `OUT_DIR/COHORT12-ARM.eval` for every cohort and arm in the records; ExportError if unfit."""
    try:
        runs = load_runs(runs_path)
        fallback = datetime.fromtimestamp(runs_path.stat().st_mtime, UTC)
    except OSError as exc:
        raise ExportError([f"{runs_path}: cannot read: {exc.strerror or exc}"]) from exc
    except CompareError as exc:  # too large, unreadable
        raise ExportError(exc.problems) from exc
    by_arm = _checked(runs)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError([f"{out_dir}: cannot create: {exc.strerror or exc}"]) from exc
    written = []
    for cohort, head in runs.headers.items():
        for arm in head.arms:
            records = by_arm.get((cohort, arm.name), [])
            log = arm_log(runs, head, arm.name, records, fallback)
            path = out_dir / f"{cohort[:12]}-{arm.name}{LOG_SUFFIX}"
            write_eval_log(log, str(path))
            written.append(ExportedLog(path, cohort, arm.name, len(records)))
    return written


def _checked(runs: Runs) -> dict[tuple[str, str], list[AttemptRecord]]:
    """Attempts by (cohort, arm), in task then repetition order; records that contradict their cohort refuse."""
    problems = list(runs.problems)
    if not runs.headers and not problems:
        problems.append("no cohort in the file")
    seen: dict[tuple[str, str, int, str], int] = {}
    by_arm: dict[tuple[str, str], list[AttemptRecord]] = {}
    for number, record in runs.attempts:
        head = runs.headers.get(record.cohort)
        where = f"line {number}"
        if head is None:
            problems.append(f"{where}: cohort {record.cohort[:12]} has no `cohort` header line")
            continue
        if record.arm not in {a.name for a in head.arms} or record.task not in head.tasks \
                or record.repetition > head.repetitions or record.model != head.model:
            problems.append(f"{where}: task {record.task}, repetition {record.repetition}, arm {record.arm}, "
                            f"model {record.model} do not fit cohort {record.cohort[:12]}")
            continue
        key = (record.cohort, record.task, record.repetition, record.arm)
        if key in seen:
            problems.append(f"{where}: duplicate record for task {record.task}, repetition {record.repetition}, "
                            f"arm {record.arm} (first at line {seen[key]})")
            continue
        seen[key] = number
        by_arm.setdefault((record.cohort, record.arm), []).append(record)
    if problems:
        raise ExportError(problems)
    for (cohort, _), records in by_arm.items():
        order = {task: i for i, task in enumerate(runs.headers[cohort].tasks)}
        records.sort(key=lambda r: (order[r.task], r.repetition))
    return by_arm


def arm_log(runs: Runs, head: CohortHeader, arm: str, records: list[AttemptRecord], fallback: datetime) -> EvalLog:
    """One arm of one cohort as an Inspect log."""
    # Files from before the harness's claim was recorded get no harness score at all; otherwise every
    # attempt gets one, and an attempt without a claim (killed, cut) scores "no answer".
    claims = any(r.harness_verification is not None for r in records)
    samples = [_sample(r, claims) for r in records]
    starts = [_started(r) for r in records]
    known = [s for s in starts if s is not None]
    created = min(known) if known else fallback
    ends = [s + timedelta(milliseconds=r.elapsed_ms) for s, r in zip(starts, records, strict=True) if s is not None]
    info = next(a for a in head.arms if a.name == arm)
    invalid = {task: why for (cohort, task), why in sorted(runs.invalid.items()) if cohort == head.cohort}
    valid_tasks = [t for t in head.tasks if t not in invalid]
    digest = hashlib.sha256(f"{head.cohort}\0{arm}".encode()).hexdigest()
    spec = EvalSpec(
        eval_id=digest[:22], run_id=head.cohort[:22], created=_iso(created),
        task=f"lsp_agent_eval_{arm}", task_id=digest[:22], task_display_name=f"{arm} · cohort {head.cohort[:12]}",
        task_args={"arm": arm}, solver="lsp-agent", solver_args={"toolProfile": info.tool_profile,
                                                                  "features": info.features},
        dataset=EvalDataset(name=f"cohort {head.cohort[:12]}", samples=len(valid_tasks), sample_ids=valid_tasks),
        model=head.model, config=EvalConfig(epochs=head.repetitions),
        metadata={"source": "lsp-agent eval export-inspect", "cohort": head.cohort,
                  "runtimeRevision": head.runtime_revision, "arm": info.model_dump(mode="json"),
                  "arms": [a.name for a in head.arms], "invalidTasks": invalid},
    )
    plan = EvalPlan(name="lsp-agent", steps=[EvalPlanStep(solver="lsp-agent run", params={
        "toolProfile": info.tool_profile, "features": info.features})])
    status, error = _status(runs, head.cohort)
    return EvalLog(
        eval=spec, plan=plan, status=status, error=error, samples=samples,
        results=EvalResults(total_samples=len(valid_tasks) * head.repetitions, completed_samples=len(samples),
                            scores=_scores(samples)),
        # Without recorded start times the run's span is unknown: left empty rather than made up.
        stats=EvalStats(started_at=_iso(min(known)) if known else "", completed_at=_iso(max(ends)) if ends else "",
                        model_usage=_total_usage(samples, head.model)),
    )


def _status(runs: Runs, cohort: str) -> tuple[Literal["success", "cancelled", "error"], EvalError | None]:
    marker = runs.incomplete.get(cohort)
    if marker is None:
        return "success", None
    if marker.reason == "cancelled":
        return "cancelled", None
    message = (f"the cohort is incomplete ({marker.reason}: {marker.recorded} of {marker.planned} attempts "
               "recorded); `eval run MANIFEST --resume RUNS` adds the missing ones")
    return "error", EvalError(message=message, traceback="", traceback_ansi="")


def _sample(record: AttemptRecord, with_claim: bool) -> EvalSample:
    fields = record.model_dump(mode="json")  # camelCase, with whatever newer records add
    scores: dict[str, Score] = {ORACLE_SCORER: oracle_score(record.outcome)}
    if record.harness_verification is not None:
        scores[HARNESS_SCORER] = harness_score(record.harness_verification, record.outcome)
    elif with_claim:
        scores[HARNESS_SCORER] = claim_score(None)
    started = _started(record)
    seconds = record.elapsed_ms / 1000
    usage = {}
    if record.metrics is not None:
        m = record.metrics
        usage[record.model] = ModelUsage(
            input_tokens=m.input_tokens, output_tokens=m.output_tokens,
            total_tokens=m.input_tokens + m.output_tokens + m.reasoning_tokens,
            input_tokens_cache_read=m.cache_read_tokens, reasoning_tokens=m.reasoning_tokens)
    return EvalSample(
        id=record.task, epoch=record.repetition, input=f"(task {record.task}: prompts are not recorded)",
        target="", scores=scores, model_usage=usage,
        metadata={k: v for k, v in fields.items() if k not in ("type", "cohort", "task", "repetition")},
        started_at=_iso(started) if started else None,
        completed_at=_iso(started + timedelta(milliseconds=record.elapsed_ms)) if started else None,
        total_time=seconds, working_time=seconds,
    )


def _started(record: AttemptRecord) -> datetime | None:
    raw = record.model_dump(mode="json").get("startedAt")
    if not isinstance(raw, str):
        return None
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat()


def _scores(samples: list[EvalSample]) -> list[EvalScore]:
    out = []
    for name in (ORACLE_SCORER, HARNESS_SCORER):
        scored = [SampleScore(score=s.scores[name], sample_id=s.id) for s in samples if s.scores and name in s.scores]
        if name == HARNESS_SCORER and not scored:
            continue  # records from before the harness's claim was recorded
        values = score_metrics(scored)
        out.append(EvalScore(name=name, scorer=name, scored_samples=len(scored),
                             unscored_samples=len(samples) - len(scored),
                             metrics={k: EvalMetric(name=k, value=v) for k, v in values.items()}))
    return out


def _total_usage(samples: list[EvalSample], model: str) -> dict[str, ModelUsage]:
    used = [s.model_usage[model] for s in samples if model in s.model_usage]
    if not used:
        return {}
    total = ModelUsage()
    for u in used:
        total = total + u
    return {model: total}

