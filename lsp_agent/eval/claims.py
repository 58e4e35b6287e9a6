"""How often the harness's own claim at the end of a run agreed with the oracle, per arm.

The harness ends every run with a verification status (verified / failed / not_run) derived from
its own checks; the oracle is the trusted judge. Only this project can measure the gap between
the two, so `compare` reports it first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsp_agent.eval.records import AttemptRecord, Outcome
from lsp_agent.eval.stats import wilson


def _rate(hits: int, over: int) -> dict[str, Any]:
    bounds = wilson(hits, over)
    return {"count": hits, "of": over, "rate": hits / over if over else None,
            "interval95": None if bounds is None else [bounds[0], bounds[1]]}


def claim_vs_oracle(records: Sequence[AttemptRecord]) -> dict[str, Any]:
    """Counts over one arm's attempts.

    Decided: the oracle passed or failed AND the harness claimed verified or failed. False verified is
    over the harness's "verified" claims (how often that claim was wrong); false failed over its
    "failed" claims; agreement over all decided attempts.
    """
    decided = [r for r in records if r.outcome in (Outcome.VERIFIED, Outcome.FAILED)
               and r.harness_verification in ("verified", "failed")]
    said_verified = [r for r in decided if r.harness_verification == "verified"]
    said_failed = [r for r in decided if r.harness_verification == "failed"]
    false_verified = sum(1 for r in said_verified if r.outcome is Outcome.FAILED)
    false_failed = sum(1 for r in said_failed if r.outcome is Outcome.VERIFIED)
    return {
        "attempts": len(records),
        "decided": len(decided),
        "agreement": _rate(len(decided) - false_verified - false_failed, len(decided)),
        "falseVerified": _rate(false_verified, len(said_verified)),
        "falseFailed": _rate(false_failed, len(said_failed)),
        "harnessNotRun": sum(1 for r in records if r.harness_verification == "not_run"),
        "noClaimRecorded": sum(1 for r in records if r.harness_verification is None),
        "oracleUndecided": sum(1 for r in records if r.outcome not in (Outcome.VERIFIED, Outcome.FAILED)),
    }
