"""Interval estimates and tests for paired eval data: pure functions, standard library only.

Every random draw comes from a `random.Random` seeded by the caller, so the same
records always give the same intervals.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

#: Two-sided significance level of one confirmatory verdict.
ALPHA = 0.05
POWER = 0.80
#: Bootstrap resamples; enough for a stable 95 % percentile interval, few enough to stay quick.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20260101

_NORMAL = statistics.NormalDist()


def z_two_sided(alpha: float) -> float:
    return _NORMAL.inv_cdf(1 - alpha / 2)


def wilson(successes: int, trials: int, alpha: float = ALPHA) -> tuple[float, float] | None:
    """Wilson score interval of a proportion; None when there are no trials."""
    if trials <= 0:
        return None
    z = z_two_sided(alpha)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    # the exact ends: rounding may push them a hair past the observed 0 or 1
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def mcnemar_exact(only_baseline: int, only_candidate: int) -> float:
    """Two-sided exact McNemar p-value: a binomial(b + c, 1/2) test on the discordant pairs."""
    n = only_baseline + only_candidate
    if n == 0:
        return 1.0
    k = min(only_baseline, only_candidate)
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2 ** n)
    return float(min(Fraction(1), 2 * tail))


@dataclass(frozen=True)
class PairedCounts:
    """Success of the two arms over the same pairs."""

    both: int  # both arms verified
    only_baseline: int
    only_candidate: int
    neither: int

    @property
    def pairs(self) -> int:
        return self.both + self.only_baseline + self.only_candidate + self.neither

    @property
    def difference(self) -> float:
        """Candidate success rate minus baseline success rate."""
        return (self.only_candidate - self.only_baseline) / self.pairs


def newcombe_paired(counts: PairedCounts, alpha: float = ALPHA) -> tuple[float, float] | None:
    """Newcombe's (1998) method 10 interval for a difference of paired proportions (candidate - baseline).

    It combines the two arms' Wilson intervals with the correlation of the 2x2 table, so it stays
    inside [-1, 1] and behaves at 0 % and 100 %, unlike the Wald interval.
    """
    n = counts.pairs
    if n == 0:
        return None
    cand_k = counts.both + counts.only_candidate
    base_k = counts.both + counts.only_baseline
    p1, p2 = cand_k / n, base_k / n
    l1, u1 = wilson(cand_k, n, alpha) or (0.0, 1.0)
    l2, u2 = wilson(base_k, n, alpha) or (0.0, 1.0)
    a, b, c, d = counts.both, counts.only_candidate, counts.only_baseline, counts.neither
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    phi = (a * d - b * c) / math.sqrt(margins) if margins else 0.0
    diff = p1 - p2
    low = diff - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = diff + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, low), min(1.0, high)


def detectable_difference(counts: PairedCounts, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest success-rate difference this many pairs detect with `power` (normal approximation).

    delta = (z(1-alpha/2) + z_power) * sqrt(psi / n), psi the share of discordant pairs (the variance of one pair's
    difference under the null). When no pair is discordant, psi falls back to 2*p*(1 - p), the value for
    independent arms. None when every attempt of both arms has the same outcome.
    """
    n = counts.pairs
    if n == 0:
        return None
    psi = (counts.only_baseline + counts.only_candidate) / n
    if psi == 0:
        pooled = (2 * counts.both + counts.only_baseline + counts.only_candidate) / (2 * n)
        psi = 2 * pooled * (1 - pooled)
    if psi == 0:
        return None
    return (z_two_sided(alpha) + _NORMAL.inv_cdf(power)) * math.sqrt(psi / n)


def detectable_ratio(log_differences: Sequence[float], alpha: float = ALPHA,
                     power: float = POWER) -> float | None:
    """The smallest ratio (> 1) detectable with `power`: exp((z(1-alpha/2) + z_power) * sd / sqrt(n)) over
    per-pair log ratios. None with fewer than two pairs."""
    n = len(log_differences)
    if n < 2:
        return None
    sd = statistics.stdev(log_differences)
    return math.exp((z_two_sided(alpha) + _NORMAL.inv_cdf(power)) * sd / math.sqrt(n))


def median_ratio(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Median over pairs of candidate / baseline (pairs with a positive baseline)."""
    ratios = [c / b for b, c in pairs if b > 0]
    return float(statistics.median(ratios)) if ratios else None


def ratio_of_sums(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Σ candidate / Σ baseline: the ratio of the arms' means; None when the baseline sums to 0."""
    base = sum(b for b, _ in pairs)
    return sum(c for _, c in pairs) / base if base > 0 else None


def bootstrap_distribution(pairs: Sequence[tuple[float, float]],
                           statistic: Callable[[Sequence[tuple[float, float]]], float | None],
                           resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> list[float] | None:
    """`statistic` over pairs resampled with replacement (a paired bootstrap), sorted.

    Seeded: the same pairs in the same order always give the same values. None with fewer than two
    pairs, or when the statistic is undefined in more than a tenth of the resamples.
    """
    if len(pairs) < 2:
        return None
    rng = random.Random(seed)
    values = []
    for _ in range(resamples):
        value = statistic(rng.choices(pairs, k=len(pairs)))
        if value is not None:
            values.append(value)
    if len(values) < resamples * 0.9:
        return None
    values.sort()
    return values


def percentile_interval(values: Sequence[float], alpha: float = ALPHA) -> tuple[float, float]:
    """The central 1 - alpha of sorted bootstrap values."""
    tail = alpha / 2
    low = values[max(0, math.floor(tail * len(values)))]
    high = values[min(len(values) - 1, math.ceil((1 - tail) * len(values)) - 1)]
    return low, high


def detectable_relative(pairs: Sequence[tuple[float, float]], alpha: float = ALPHA,
                        power: float = POWER) -> float | None:
    """The smallest ratio of means (> 1) detectable with `power`: 1 + (z(1-alpha/2) + z_power) * sd(c - b) /
    (sqrt(n) * mean b), from the pairs' differences. None with fewer than two pairs or a zero baseline."""
    n = len(pairs)
    base = sum(b for b, _ in pairs) / n if n else 0.0
    if n < 2 or base <= 0:
        return None
    sd = statistics.stdev([c - b for b, c in pairs])
    return 1 + (z_two_sided(alpha) + _NORMAL.inv_cdf(power)) * sd / (math.sqrt(n) * base)


def sign_flip_p(pairs: Sequence[tuple[float, float]],
                statistic: Callable[[Sequence[tuple[float, float]]], float | None],
                resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> float | None:
    """Two-sided paired permutation p-value of a ratio statistic: each pair's arm labels swapped at random.

    The test statistic is |log ratio|; p = (1 + flips at least as extreme) / (1 + flips), which keeps the
    false-positive rate at or under the level whenever the arms are exchangeable (the null hypothesis),
    however few the pairs. None when the observed ratio is undefined or not positive.
    """
    observed = statistic(pairs)
    if observed is None or observed <= 0 or len(pairs) < 2:
        return None
    extreme = abs(math.log(observed))
    rng = random.Random(seed)
    hits = 0
    for _ in range(resamples):
        value = statistic([(c, b) if rng.random() < 0.5 else (b, c) for b, c in pairs])
        if value is None or value <= 0 or abs(math.log(value)) >= extreme - 1e-12:
            hits += 1
    return (1 + hits) / (1 + resamples)
