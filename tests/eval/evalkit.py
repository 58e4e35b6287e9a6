"""Helpers for the eval tests: manifests around the fake agent, in-process cohorts, record files."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path
from typing import Any

from lsp_agent.eval.executor import LocalExecutor
from lsp_agent.eval.manifest import Manifest
from lsp_agent.eval.runner import CohortResult, CohortRunner

HERE = Path(__file__).resolve().parent
PY = sys.executable
FAKE = str(HERE / "fake_agent.py")
ORACLE = str(HERE / "oracle.py")


def task(task_id: str, plan: dict[str, Any], start: str = "todo", expected: str = "ok") -> dict[str, Any]:
    """A task whose oracle wants target.txt == expected; the fake agent follows `plan`."""
    return {"id": task_id, "prompt": json.dumps(plan),
            "files": [{"path": "target.txt", "content": start}],
            "oracle": [PY, ORACLE, "target.txt", expected]}


def manifest(tasks: list[dict[str, Any]], repetitions: int = 1, timeout_ms: int = 20_000,
             arms: list[dict[str, Any]] | None = None, command: list[str] | None = None) -> dict[str, Any]:
    return {"model": "fake/model", "runtimeRevision": "test", "command": command or [PY, FAKE],
            "repetitions": repetitions, "timeoutMs": timeout_ms,
            "arms": arms or [{"name": "base"}, {"name": "cand"}], "tasks": tasks}


def run_cohort(data: dict[str, Any], jobs: int = 1, stop: asyncio.Event | None = None,
               base_dir: Path = HERE) -> tuple[list[dict[str, Any]], str, CohortResult]:
    """Run a cohort in-process; returns (NDJSON lines as dicts, stderr text, result)."""
    out, err = io.StringIO(), io.StringIO()

    async def go() -> CohortResult:
        runner = CohortRunner(Manifest.model_validate(data), base_dir, out, err, LocalExecutor(), jobs=jobs)
        return await runner.run(stop or asyncio.Event())

    result = asyncio.run(go())
    return [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue(), result


def attempts(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if line["type"] == "attempt"]


def pids_in(path: Path) -> list[int]:
    return [int(p) for p in json.loads(path.read_text())]


# --- record files for compare -----------------------------------------------------------------

COHORT = "c" * 64


def header(tasks: list[str], repetitions: int, cohort: str = COHORT, model: str = "m/x",
           arms: tuple[str, str] = ("base", "cand")) -> dict[str, Any]:
    return {"type": "cohort", "cohort": cohort, "model": model, "runtimeRevision": "r1",
            "arms": [{"name": a, "features": {}, "toolProfile": "default"} for a in arms],
            "tasks": tasks, "repetitions": repetitions, "timeoutMs": 60_000,
            "attempts": len(tasks) * repetitions * 2}


def record(task: str, repetition: int, arm: str, outcome: str = "verified", elapsed: int = 1000,
           cohort: str = COHORT, model: str = "m/x", metrics: dict[str, int] | None = None,
           status: str | None = None) -> dict[str, Any]:
    observed = metrics if metrics is not None else {
        "steps": 2, "inputTokens": 100, "outputTokens": 10, "reasoningTokens": 0, "cacheReadTokens": 0,
        "toolCalls": 1, "toolErrors": 0}
    status = status or "observed"
    return {"type": "attempt", "cohort": cohort, "model": model, "task": task, "repetition": repetition,
            "arm": arm, "position": 0, "outcome": outcome, "elapsedMs": elapsed,
            "verificationMs": None if outcome in ("timeout", "cancelled") else 10,
            "exitCode": 0, "stopReason": "final", "metricsStatus": status,
            "metrics": observed if status == "observed" else None,
            "metricsIssue": "interrupted" if status == "partial" else None}


def write_runs(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
