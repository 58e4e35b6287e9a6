"""What the paired records show about candidate vs baseline, metric by metric, with the verdicts.

The rule that keeps the verdicts from over-claiming (fixed-sequence gatekeeping): the manifest's
primary metric is judged at the full 5 %; only if it shows a difference are the other metrics
judged, each at 5 % / k (Bonferroni over the k secondaries). So the chance that an experiment
with no real difference yields ANY "difference shown" stays at or under 5 %. Every metric also
carries its plain 95 % interval, for reading, not for claims.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from lsp_agent.eval.metrics import METRIC_NAMES, MetricsStatus
from lsp_agent.eval.records import AttemptRecord, Outcome
from lsp_agent.eval.stats import (
    ALPHA,
    BOOTSTRAP_RESAMPLES,
    PairedCounts,
    bootstrap_distribution,
    detectable_difference,
    detectable_ratio,
    detectable_relative,
    mcnemar_exact,
    median_ratio,
    newcombe_paired,
    percentile_interval,
    ratio_of_sums,
    sign_flip_p,
    wilson,
)

SUCCESS = "success"
ELAPSED_RATIO = "elapsedRatio"
#: Every metric `compare` judges; the manifest's `primaryMetric` is one of them.
EFFECT_NAMES: tuple[str, ...] = (SUCCESS, ELAPSED_RATIO, *METRIC_NAMES)
DEFAULT_PRIMARY = SUCCESS
NO_DIFFERENCE = "no difference shown"

Twin = tuple[AttemptRecord, AttemptRecord]  # (baseline, candidate) of one pair
Values = list[tuple[float, float]]


def rule(primary: str) -> str:
    k = len(EFFECT_NAMES) - 1
    return (f"primary metric {primary}: difference shown only if its 95 % interval excludes "
            f"no-change and its paired test (exact McNemar for success, sign-flip permutation for ratios) "
            f"gives p < 0.05; the other {k} "
            f"metrics are judged only after that, each at 5 %/{k} (Bonferroni), so the chance of any false "
            "'difference shown' stays at or under 5 %")


def success_counts(twins: Sequence[Twin]) -> PairedCounts:
    both = only_b = only_c = neither = 0
    for base, cand in twins:
        b, c = base.outcome is Outcome.VERIFIED, cand.outcome is Outcome.VERIFIED
        both += b and c
        only_b += b and not c
        only_c += c and not b
        neither += not b and not c
    return PairedCounts(both, only_b, only_c, neither)


def elapsed_values(twins: Sequence[Twin]) -> Values:
    """(baseline, candidate) elapsed ms of the pairs where both attempts are verified."""
    return [(float(b.elapsed_ms), float(c.elapsed_ms)) for b, c in twins
            if b.outcome is Outcome.VERIFIED and c.outcome is Outcome.VERIFIED and b.elapsed_ms > 0]


def metric_values(twins: Sequence[Twin], name: str) -> Values:
    """(baseline, candidate) totals of one metric, pairs where both have observed metrics."""
    out = []
    for b, c in twins:
        if (b.metrics_status is MetricsStatus.OBSERVED and b.metrics is not None
                and c.metrics_status is MetricsStatus.OBSERVED and c.metrics is not None):
            out.append((float(b.metrics.model_dump(by_alias=True)[name]),
                        float(c.metrics.model_dump(by_alias=True)[name])))
    return out


def _interval(bounds: tuple[float, float] | None) -> list[float] | None:
    return None if bounds is None else [bounds[0], bounds[1]]


def _excludes(bounds: list[float] | None, null: float) -> bool:
    return bounds is not None and (bounds[0] > null or bounds[1] < null)


def _success(twins: Sequence[Twin], alpha: float) -> dict[str, Any]:
    counts = success_counts(twins)
    p = mcnemar_exact(counts.only_baseline, counts.only_candidate)
    verdict_interval = _interval(newcombe_paired(counts, alpha))
    return {
        "kind": "difference", "null": 0.0, "pairsUsed": counts.pairs,
        "omittedReason": None if counts.pairs else "no pairs",
        "estimate": counts.difference if counts.pairs else None,
        "interval95": _interval(newcombe_paired(counts)),
        "verdictInterval": verdict_interval,
        "method": "difference of success rates (candidate - baseline) over all pairs; Newcombe's paired "
                  "interval (method 10); exact McNemar test on the discordant pairs",
        "test": {"name": "exact McNemar", "pValue": p, "onlyBaseline": counts.only_baseline,
                 "onlyCandidate": counts.only_candidate},
        "detectable": detectable_difference(counts),
        "shown": _excludes(verdict_interval, 0.0) and p < alpha,
    }


def _ratio(values: Values, alpha: float, statistic: Any, method: str, detectable: float | None,
           resamples: int) -> dict[str, Any]:
    boot = bootstrap_distribution(values, statistic, resamples=resamples)
    verdict_interval = None if boot is None else list(percentile_interval(boot, alpha))
    value = statistic(values) if values else None
    p = sign_flip_p(values, statistic, resamples)
    omitted = ("fewer than 2 pairs" if len(values) < 2 else "the baseline is 0" if value is None
               else "undefined in most resamples" if boot is None else None)
    return {
        "kind": "ratio", "null": 1.0, "pairsUsed": len(values), "omittedReason": omitted,
        "estimate": value,
        "interval95": None if boot is None else list(percentile_interval(boot)),
        "verdictInterval": verdict_interval,
        "method": f"{method}; paired sign-flip permutation test",
        "test": None if p is None else {"name": "sign-flip permutation", "pValue": p},
        "detectable": detectable,
        "shown": _excludes(verdict_interval, 1.0) and p is not None and p < alpha,
    }


def effect(twins: Sequence[Twin], name: str, alpha: float = ALPHA,
           resamples: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """One metric's estimate, its 95 % interval, and its interval at the verdict's level `alpha`."""
    if name == SUCCESS:
        return _success(twins, alpha)
    if name == ELAPSED_RATIO:
        values = elapsed_values(twins)
        logs = [math.log(c / b) for b, c in values if c > 0]
        return _ratio(values, alpha, median_ratio,
                      "median over pairs (both verified) of candidate/baseline elapsed; seeded paired bootstrap "
                      "percentile interval", detectable_ratio(logs), resamples)
    values = metric_values(twins, name)
    return _ratio(values, alpha, ratio_of_sums,
                  "candidate mean / baseline mean over pairs with observed metrics on both sides; seeded paired "
                  "bootstrap percentile interval", detectable_relative(values), resamples)


def _direction(result: dict[str, Any]) -> str:
    bounds = result["verdictInterval"]
    return "candidate higher" if bounds[0] > result["null"] else "candidate lower"


def judge(twins: Sequence[Twin], primary: str = DEFAULT_PRIMARY,
          resamples: int = BOOTSTRAP_RESAMPLES) -> list[dict[str, Any]]:
    """Every metric, the primary first, each with its verdict line under the gatekeeping rule."""
    secondaries = [n for n in EFFECT_NAMES if n != primary]
    first = effect(twins, primary, ALPHA, resamples)
    out = [{"metric": primary, "role": "primary", "verdictLevel": 1 - ALPHA, **first}]
    gate_open = first["shown"]
    share = ALPHA / len(secondaries)
    for name in secondaries:
        result = effect(twins, name, share, resamples)
        out.append({"metric": name, "role": "secondary", "verdictLevel": 1 - share, **result})
    for item in out:
        item["verdict"] = _verdict(item, gate_open)
    return out


def _verdict(item: dict[str, Any], gate_open: bool) -> str:
    if item["estimate"] is None or item["verdictInterval"] is None:
        return f"{NO_DIFFERENCE} (no interval: {item['omittedReason']})"
    if item["role"] == "secondary" and not gate_open:
        if item["shown"]:
            return (f"{NO_DIFFERENCE} (its interval excludes {_null(item)}, but the primary metric showed "
                    "no difference, so this is not a finding)")
        return NO_DIFFERENCE
    if not item["shown"]:
        if _excludes(item["interval95"], item["null"]):
            return (f"{NO_DIFFERENCE} (its 95 % interval excludes {_null(item)}, but not at the "
                    f"{item['verdictLevel'] * 100:.2f} % level this metric is judged at)")
        return NO_DIFFERENCE
    return f"difference shown: {_direction(item)} (interval at {item['verdictLevel'] * 100:g} % excludes " \
           f"{_null(item)})"


def _null(item: dict[str, Any]) -> str:
    return "0" if item["kind"] == "difference" else "1"


def simulate_null(twins: Sequence[Twin], cohorts: int, primary: str = DEFAULT_PRIMARY, seed: int = 1,
                  resamples: int = 500) -> dict[str, Any]:
    """Replays the cohort as if both arms were the same: each pair's arm labels are swapped with
    probability 1/2, `cohorts` times, and counts how often a verdict still claims a difference.

    Under the gatekeeping rule a claim needs the primary to show one, so the share of cohorts with
    any claim equals the primary's false-positive share.
    """
    rng = random.Random(seed)
    claimed = 0
    for _ in range(cohorts):
        shuffled = [(c, b) if rng.random() < 0.5 else (b, c) for b, c in twins]
        claimed += bool(effect(shuffled, primary, ALPHA, resamples)["shown"])
    rate = claimed / cohorts if cohorts else None
    return {"cohorts": cohorts, "primaryMetric": primary, "claimedDifference": claimed, "falsePositiveRate": rate,
            "interval95": _interval(wilson(claimed, cohorts)), "alpha": ALPHA, "seed": seed,
            "withinAlpha": rate is not None and rate <= ALPHA}
