"""Eval outcomes as Inspect AI scores, shared by the log export and the Inspect task.

The oracle's verdict is the score. CORRECT only for `verified`, so Inspect's `accuracy` is the same
number as `eval compare`'s success rate: every other outcome stays in the denominator as 0
(NOANSWER where nobody decided — the oracle could not, or the attempt was cut — INCORRECT where
the task is known not done).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from lsp_agent.eval.inspect_extra import InspectMissing
from lsp_agent.eval.records import Outcome

try:
    from inspect_ai.scorer import CORRECT, INCORRECT, NOANSWER, SampleScore, Score, value_to_float
except ImportError as exc:  # the optional extra
    raise InspectMissing(exc) from exc

ORACLE_SCORER = "oracle"
HARNESS_SCORER = "harness_verification"

_ORACLE_VALUE = {
    Outcome.VERIFIED: CORRECT,
    Outcome.FAILED: INCORRECT,
    Outcome.TIMEOUT: INCORRECT,
    Outcome.COMPLETED_UNVERIFIED: NOANSWER,
    Outcome.CANCELLED: NOANSWER,
}

_EXPLAIN = {
    Outcome.VERIFIED: "the agent exited and the oracle then exited 0",
    Outcome.FAILED: "the agent exited and the oracle then exited 1",
    Outcome.TIMEOUT: "the agent outlived the timeout and was killed; the oracle did not run",
    Outcome.COMPLETED_UNVERIFIED: "the agent exited but the oracle could not decide",
    Outcome.CANCELLED: "the attempt was interrupted; no verdict",
}

#: The harness's own claim at the end of its run: `verified` is its claim of success.
_HARNESS_VALUE = {"verified": CORRECT, "failed": INCORRECT, "not_run": NOANSWER}


def oracle_score(outcome: Outcome, detail: str | None = None) -> Score:
    explanation = _EXPLAIN[outcome] + (f" ({detail})" if detail else "")
    return Score(value=_ORACLE_VALUE[outcome], answer=outcome.value, explanation=explanation)


def claim_score(claim: str | None) -> Score:
    """What the harness itself said at the end of its run; no claim when its stream was cut or absent."""
    if claim is None:
        return Score(value=NOANSWER, explanation="no claim: the run's final event was not read")
    return Score(value=_HARNESS_VALUE.get(claim, NOANSWER), answer=claim, explanation=f"the harness reported {claim}")


def harness_score(claim: str, outcome: Outcome) -> Score:
    """The harness's claim next to what the oracle found for the same attempt."""
    score = claim_score(claim)
    score.explanation = f"{score.explanation}; the oracle's outcome was {outcome.value}"
    score.metadata = {"agreesWithOracle": agrees(claim, outcome)}
    return score


def agrees(claim: str, outcome: Outcome) -> bool:
    """A claim of "verified" is right exactly when the oracle verified; any other claim when it did not."""
    return (claim == "verified") == (outcome is Outcome.VERIFIED)


def score_metrics(scores: Sequence[SampleScore]) -> dict[str, float]:
    """`accuracy` and `stderr` as Inspect's metrics of those names compute them (unclustered)."""
    to_float = value_to_float()
    values = [to_float(s.score.value) for s in scores]
    if not values:
        return {}
    spread = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return {"accuracy": statistics.fmean(values), "stderr": spread}
