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
