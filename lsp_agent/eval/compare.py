"""`eval compare`: paired statistics over a cohort's records, honest about what they cover.

Rules, so a comparison cannot flatter an arm: every attempt stays in the success-rate denominator;
timings are over verified attempts only and say so; a ratio needs both halves
of a pair verified; P95 needs 20 verified observations (`--p95-min-verified`) in one homogeneous
task/model/cohort/arm cell; a missing metric is counted as missing, never as 0.
Anything that would make pairs unreal (duplicates, gaps, interrupted cohorts)
is rejected instead of being summarised.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_agent.eval.claims import claim_vs_oracle
from lsp_agent.eval.effects import judge, rule, simulate_null
from lsp_agent.eval.metrics import METRIC_NAMES, MetricsStatus
from lsp_agent.eval.mixes import provenance, warnings
from lsp_agent.eval.records import (
    AttemptRecord,
    CohortHeader,
    Incomplete,
    Outcome,
    RecordError,
    Resume,
    TaskInvalid,
    parse_line,
)
from lsp_agent.eval.stats import wilson

#: The default of `eval compare --p95-min-verified`: fewer verified observations say nothing of a tail.
P95_MIN_VERIFIED = 20
MAX_RUNS_BYTES = 512 * 1024 * 1024
_SHOWN_PROBLEMS = 25
ALL_TASKS = "(all tasks)"


class CompareError(Exception):
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:_SHOWN_PROBLEMS]
        more = len(problems) - len(shown)
        super().__init__("cannot compare:\n" + "\n".join(f"  - {p}" for p in shown)
                         + (f"\n  ... and {more} more" if more else ""))


@dataclass
class Runs:
    headers: dict[str, CohortHeader] = field(default_factory=dict)
    attempts: list[tuple[int, AttemptRecord]] = field(default_factory=list)
    invalid: dict[tuple[str, str], str] = field(default_factory=dict)
    incomplete: dict[str, Incomplete] = field(default_factory=dict)
    resumed: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


def parse_runs(lines: Iterable[str | bytes]) -> Runs:
    runs = Runs()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = parse_line(raw, number)
        except RecordError as exc:
            runs.problems.append(str(exc))
            continue
        if isinstance(record, CohortHeader):
            if record.cohort in runs.headers:
                runs.problems.append(f"line {number}: a second header for cohort {record.cohort[:12]} "
                                     "(the same manifest run twice into one file?)")
            else:
                runs.headers[record.cohort] = record
        elif isinstance(record, AttemptRecord):
            runs.attempts.append((number, record))
        elif isinstance(record, TaskInvalid):
            runs.invalid[(record.cohort, record.task)] = record.reason
        elif isinstance(record, Resume):
            # `eval run --resume` re-runs the missing and cancelled attempts: those supersede these.
            runs.incomplete.pop(record.cohort, None)
            runs.resumed.add(record.cohort)
            runs.attempts = [(n, a) for n, a in runs.attempts
                             if not (a.cohort == record.cohort and a.outcome is Outcome.CANCELLED)]
        else:
            runs.incomplete[record.cohort] = record
    return runs


def load_runs(path: Path) -> Runs:
    try:
        if path.stat().st_size > MAX_RUNS_BYTES:
            raise CompareError([f"{path}: larger than {MAX_RUNS_BYTES} bytes"])
        with path.open("rb") as handle:
            return parse_runs(handle)
    except OSError as exc:
        raise CompareError([f"{path}: cannot read: {exc.strerror or exc}"]) from exc


@dataclass(frozen=True)
class Pair:
    cohort: str
    model: str
    task: str
    repetition: int
    baseline: AttemptRecord
    candidate: AttemptRecord


#: (cohort, model, task, repetition, arm) → the first record for it, with its line number
Seen = dict[tuple[str, str, str, int, str], tuple[int, AttemptRecord]]


def pair_up(runs: Runs, baseline: str, candidate: str) -> list[Pair]:
    """Every expected (cohort, model, task, repetition) with exactly one record per arm, or CompareError."""
    if baseline == candidate:
        raise CompareError([f"baseline and candidate are the same arm ({baseline!r}); name two different arms"])
    problems = [*runs.problems, *_cohort_problems(runs)]
    if not runs.headers and not problems:
        problems.append("no cohort in the file")
    problems += _arm_problems(runs, baseline, candidate)
    seen = _index_attempts(runs, problems)
    pairs = _pairs(runs, seen, baseline, candidate, problems)
    if not problems and not pairs:
        problems.append("no valid task left to compare (every task is invalid)")
    if problems:
        raise CompareError(problems)
    return pairs


def _cohort_problems(runs: Runs) -> list[str]:
    """Cohorts that cannot be paired: records without a header line, runs that stopped early."""
    problems = []
    cohorts = ({r.cohort for _, r in runs.attempts} | {c for c, _ in runs.invalid} | set(runs.incomplete)
               | runs.resumed)
    for cohort in sorted(cohorts - set(runs.headers)):
        problems.append(f"cohort {cohort[:12]}: records without a `cohort` header line (file cut or mixed?)")
    for cohort, marker in runs.incomplete.items():
        problems.append(f"cohort {cohort[:12]} is incomplete ({marker.reason}: {marker.recorded} of "
                        f"{marker.planned} attempts recorded); add the missing ones with "
                        "`eval run MANIFEST --resume RUNS`")
    return problems


def _arm_problems(runs: Runs, baseline: str, candidate: str) -> list[str]:
    problems = []
    for cohort, head in runs.headers.items():
        names = [a.name for a in head.arms]
        for arm in (baseline, candidate):
            if arm not in names:
                problems.append(f"unknown arm {arm!r}: cohort {cohort[:12]} has arms {', '.join(names)}")
    return problems


def _index_attempts(runs: Runs, problems: list[str]) -> Seen:
    """The records by what they answer; one that does not fit its cohort or repeats a key is a problem."""
    seen: Seen = {}
    for number, record in runs.attempts:
        head = runs.headers.get(record.cohort)
        if head is None:
            continue  # already reported as a cohort without a header
        where = f"line {number} (cohort {record.cohort[:12]}, task {record.task}, repetition {record.repetition})"
        problems.extend(f"{where}: {p}" for p in _misfits(record, head))
        key = (record.cohort, record.model, record.task, record.repetition, record.arm)
        if key in seen:
            problems.append(f"{where}: duplicate record for arm {record.arm} (first at line {seen[key][0]})")
        else:
            seen[key] = (number, record)
    return seen


def _misfits(record: AttemptRecord, head: CohortHeader) -> list[str]:
    """How a record contradicts its cohort's header."""
    misfits = []
    if record.model != head.model:
        misfits.append(f"model {record.model} does not match the cohort's model {head.model}")
    if record.task not in head.tasks:
        misfits.append("the cohort has no such task")
    if record.repetition > head.repetitions:
        misfits.append(f"the cohort has only {head.repetitions} repetitions")
    if record.arm not in {a.name for a in head.arms}:
        misfits.append(f"unknown arm {record.arm!r}")
    return misfits


def _pairs(runs: Runs, seen: Seen, baseline: str, candidate: str, problems: list[str]) -> list[Pair]:
    """One pair per expected attempt; a missing half is a problem."""
    pairs: list[Pair] = []
    for cohort, head, task, repetition in _expected(runs):
        got = {arm: seen.get((cohort, head.model, task, repetition, arm)) for arm in (baseline, candidate)}
        b, c = got[baseline], got[candidate]
        if b is None or c is None:
            absent = [arm for arm, hit in got.items() if hit is None]
            problems.append(f"missing pair: cohort {cohort[:12]}, model {head.model}, task {task}, "
                            f"repetition {repetition} has no record for arm {', '.join(absent)}")
            continue
        pairs.append(Pair(cohort, head.model, task, repetition, b[1], c[1]))
    return pairs


def _expected(runs: Runs) -> Iterator[tuple[str, CohortHeader, str, int]]:
    """(cohort, header, task, repetition) of every attempt the headers plan, in their order,
    leaving out the tasks a cohort found invalid."""
    for cohort, head in runs.headers.items():
        for task in head.tasks:
            if (cohort, task) not in runs.invalid:
                for repetition in range(1, head.repetitions + 1):
                    yield cohort, head, task, repetition


# --- statistics ------------------------------------------------------------------------------


def median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def p95_nearest_rank(values: list[float]) -> float:
    ordered = sorted(values)
    return float(ordered[math.ceil(0.95 * len(ordered)) - 1])


def arm_stats(records: list[AttemptRecord], p95_min_verified: int = P95_MIN_VERIFIED) -> dict[str, Any]:
    verified = [r for r in records if r.outcome is Outcome.VERIFIED]
    elapsed = [float(r.elapsed_ms) for r in verified]
    cells = {(r.task, r.model, r.cohort) for r in records}
    p95: float | None = None
    if len(cells) > 1:
        why: str | None = (f"mixed cells ({len(cells)} task/model/cohort cells); P95 is given only "
                           "within one homogeneous cell")
    elif len(verified) < p95_min_verified:
        why = f"{len(verified)} verified observation(s); P95 needs at least {p95_min_verified}"
    else:
        why, p95 = None, p95_nearest_rank(elapsed)
    metrics: dict[str, Any] = {}
    for name in METRIC_NAMES:
        observed = [float(r.metrics.model_dump(by_alias=True)[name]) for r in records
                    if r.metrics_status is MetricsStatus.OBSERVED and r.metrics is not None]
        metrics[name] = {"median": median(observed), "observed": len(observed),
                         "missing": len(records) - len(observed)}
    return {
        "attempts": len(records),
        "verified": len(verified),
        "successRate": len(verified) / len(records) if records else None,
        "successRateInterval95": _bounds(wilson(len(verified), len(records))),
        "outcomes": {o.value: sum(1 for r in records if r.outcome is o) for o in Outcome},
        "elapsedMsMedianVerifiedOnly": median(elapsed),
        "elapsedMsP95VerifiedOnly": p95,
        "p95OmittedReason": why,
        "metrics": metrics,
    }


def _bounds(bounds: tuple[float, float] | None) -> list[float] | None:
    return None if bounds is None else [bounds[0], bounds[1]]


def pair_stats(pairs: list[Pair]) -> dict[str, Any]:
    ratios = [p.candidate.elapsed_ms / p.baseline.elapsed_ms for p in pairs
              if p.baseline.outcome is Outcome.VERIFIED and p.candidate.outcome is Outcome.VERIFIED
              and p.baseline.elapsed_ms > 0]
    return {
        "pairs": len(pairs),
        "bothVerified": len(ratios),
        "elapsedRatioMedian": median(ratios),
        "ratioOmittedReason": None if ratios else "no pair with both attempts verified",
        "ratios": ratios,
    }


def _group(task: str, pairs: list[Pair], p95_min_verified: int) -> dict[str, Any]:
    return {
        "task": task,
        "cells": len({(p.task, p.model, p.cohort) for p in pairs}),
        "baseline": arm_stats([p.baseline for p in pairs], p95_min_verified),
        "candidate": arm_stats([p.candidate for p in pairs], p95_min_verified),
        "paired": pair_stats(pairs),
    }


def primary_metric(runs: Runs) -> str:
    """The cohorts' declared primary metric; cohorts that declare different ones cannot be judged together."""
    declared = sorted({h.primary_metric for h in runs.headers.values()})
    if len(declared) > 1:
        raise CompareError([f"the cohorts declare different primary metrics ({', '.join(declared)}); "
                            "compare them separately"])
    return declared[0] if declared else "success"


def twins(pairs: list[Pair]) -> list[tuple[AttemptRecord, AttemptRecord]]:
    return [(p.baseline, p.candidate) for p in pairs]


def summarize(runs: Runs, pairs: list[Pair], baseline: str, candidate: str,
              p95_min_verified: int = P95_MIN_VERIFIED, simulate: int = 0) -> dict[str, Any]:
    primary = primary_metric(runs)
    order: list[str] = []
    for head in runs.headers.values():
        order += [t for t in head.tasks if t not in order]
    by_task: dict[str, list[Pair]] = {}
    for pair in pairs:
        by_task.setdefault(pair.task, []).append(pair)
    facts = provenance([r for p in pairs for r in (p.baseline, p.candidate)], baseline, candidate)
    summary: dict[str, Any] = {
        "warnings": warnings(facts),
        "baseline": baseline,
        "candidate": candidate,
        "harnessVsOracle": {"baseline": claim_vs_oracle([p.baseline for p in pairs]),
                            "candidate": claim_vs_oracle([p.candidate for p in pairs])},
        "primaryMetric": primary,
        "verdictRule": rule(primary),
        "effects": judge(twins(pairs), primary),
        "provenance": facts,
        "cohorts": [{"cohort": h.cohort, "model": h.model, "runtimeRevision": h.runtime_revision,
                     "tasks": len(h.tasks), "repetitions": h.repetitions, "timeoutMs": h.timeout_ms,
                     "arms": [a.model_dump(mode="json") for a in h.arms]} for h in runs.headers.values()],
        "invalidTasks": [{"cohort": c, "task": t, "reason": why} for (c, t), why in sorted(runs.invalid.items())],
        "tasks": [_group(t, by_task[t], p95_min_verified) for t in order if t in by_task],
        "overall": _group(ALL_TASKS, pairs, p95_min_verified),
        "p95MinVerified": p95_min_verified,
        "definitions": definitions(p95_min_verified),
    }
    if simulate:
        summary["nullSimulation"] = simulate_null(twins(pairs), simulate, primary)
    return summary


def definitions(p95_min_verified: int = P95_MIN_VERIFIED) -> dict[str, str]:
    return {**DEFINITIONS, "elapsedMsP95VerifiedOnly": "nearest-rank P95 over verified attempts, only within one "
            f"task/model/cohort/arm cell with at least {p95_min_verified} of them"}


DEFINITIONS = {
    "successRate": "verified attempts / all attempts (failed, unverified and timed-out attempts stay in the "
                   "denominator)",
    "elapsedMsMedianVerifiedOnly": "median of elapsedMs (agent process + post-run oracle) over verified "
                                   "attempts only",
    "elapsedMsP95VerifiedOnly": "nearest-rank P95 over verified attempts, only within one task/model/cohort/arm "
                                f"cell with at least {P95_MIN_VERIFIED} of them",
    "elapsedRatioMedian": "median over pairs (same cohort, model, task, repetition) of candidate elapsedMs / "
                          "baseline elapsedMs, only pairs where both attempts are verified",
    "metrics": "median over attempts whose metricsStatus is observed; missing = partial or unavailable, "
               "never counted as zero",
    "successRateInterval95": "Wilson score 95 % interval of the success rate",
    "effects": "per metric: estimate, 95 % interval, the interval at the verdict's level, the smallest effect "
               "detectable at 80 % power with these pairs, and the verdict",
    "harnessVsOracle": "per arm: attempts where the oracle decided and the harness claimed verified/failed; "
                       "falseVerified over the harness's 'verified' claims, falseFailed over its 'failed' claims; "
                       "Wilson 95 % intervals",
}


def compare_file(path: Path, baseline: str, candidate: str, p95_min_verified: int = P95_MIN_VERIFIED,
                 simulate: int = 0) -> dict[str, Any]:
    runs = load_runs(path)
    return summarize(runs, pair_up(runs, baseline, candidate), baseline, candidate, p95_min_verified, simulate)
