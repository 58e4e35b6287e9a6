"""Seeded synthetic cohorts for the statistics tests: identical or planted-difference arms."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from evalkit import header, record, write_runs


def synthetic_cohort(tasks: int, repetitions: int, base_success: float, cand_success: float, seed: int,
                     claim_error: float = 0.0) -> list[dict[str, Any]]:
    """Every attempt succeeds independently with its arm's probability; elapsed times and tokens come from
    the same distribution in both arms. `claim_error`: how often the harness's claim contradicts the oracle."""
    rng = random.Random(seed)
    names = [f"t{i:02d}" for i in range(1, tasks + 1)]
    lines: list[dict[str, Any]] = [header(names, repetitions)]
    for repetition in range(1, repetitions + 1):
        for task in names:
            for arm, rate in (("base", base_success), ("cand", cand_success)):
                ok = rng.random() < rate
                tokens = int(rng.lognormvariate(8, 0.4))
                line = record(task, repetition, arm, "verified" if ok else "failed",
                              elapsed=int(rng.lognormvariate(10, 0.3)),
                              metrics={"steps": rng.randint(2, 8), "inputTokens": tokens,
                                       "outputTokens": tokens // 10, "reasoningTokens": 0, "cacheReadTokens": 0,
                                       "toolCalls": rng.randint(1, 6), "toolErrors": rng.randint(0, 1)})
                claim_right = rng.random() >= claim_error
                line["harnessVerification"] = ("verified" if ok == claim_right else "failed")
                lines.append(line)
    return lines


def write_cohort(path: Path, *args: Any, **kwargs: Any) -> Path:
    return write_runs(path, synthetic_cohort(*args, **kwargs))
