"""Compare's uncertainty: intervals, the paired test, verdicts that never over-claim, a null that stays null."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from evalkit import PY, header, record, write_runs
from paired_data import synthetic_cohort, write_cohort

from lsp_agent.eval.compare import CompareError, compare_file, load_runs, pair_up, parse_runs, twins
from lsp_agent.eval.effects import EFFECT_NAMES, NO_DIFFERENCE, judge, simulate_null
from lsp_agent.eval.manifest import Manifest
from lsp_agent.eval.report_html import render_html
from lsp_agent.eval.report_text import render_table
from lsp_agent.eval.stats import (
    PairedCounts,
    bootstrap_distribution,
    detectable_difference,
    mcnemar_exact,
    median_ratio,
    newcombe_paired,
    wilson,
)


def effect(summary: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(e for e in summary["effects"] if e["metric"] == metric)


# --- the building blocks against known values ---------------------------------------------------


def test_wilson_matches_the_textbook_values_and_the_edges() -> None:
    low, high = wilson(43, 60) or (0, 0)
    assert (round(low, 4), round(high, 4)) == (0.5923, 0.8149)
    assert wilson(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    assert wilson(10, 10) == (pytest.approx(0.7225, abs=1e-4), 1.0)
    assert wilson(0, 0) is None


def test_exact_mcnemar_is_a_binomial_test_on_the_discordant_pairs() -> None:
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(6, 0) == mcnemar_exact(0, 6)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(15, 10) == pytest.approx(0.4244, abs=1e-4)


def test_newcombe_interval_stays_in_range_and_contains_the_estimate() -> None:
    for counts in (PairedCounts(60, 0, 0, 0), PairedCounts(0, 0, 0, 60), PairedCounts(0, 30, 30, 0),
                   PairedCounts(5, 0, 12, 3), PairedCounts(1, 0, 0, 0)):
        low, high = newcombe_paired(counts) or (9, 9)
        assert -1 <= low <= counts.difference <= high <= 1
    assert newcombe_paired(PairedCounts(0, 0, 0, 0)) is None


def test_the_numbers_the_issue_quotes_are_reproduced() -> None:
    # 71.7 % vs 63.3 % over 60 pairs, 15 pairs only the baseline solved and 10 only the candidate
    counts = PairedCounts(both=28, only_baseline=15, only_candidate=10, neither=7)
    assert (counts.both + counts.only_baseline, counts.both + counts.only_candidate) == (43, 38)
    assert round(mcnemar_exact(15, 10), 2) == 0.42
    low, high = newcombe_paired(counts) or (0, 0)
    assert (round(low * 100), round(high * 100)) == (-24, 8)


def test_detectable_difference_shrinks_with_the_square_root_of_the_pairs() -> None:
    small = detectable_difference(PairedCounts(40, 10, 10, 0)) or 0
    large = detectable_difference(PairedCounts(160, 40, 40, 0)) or 0
    assert small == pytest.approx(2 * large)
    # no discordant pair: the variance of independent arms at the pooled rate
    assert detectable_difference(PairedCounts(42, 0, 0, 18)) == pytest.approx(
        (1.959964 + 0.841621) * (2 * 0.7 * 0.3 / 60) ** 0.5, rel=1e-5)
    assert detectable_difference(PairedCounts(60, 0, 0, 0)) is None


def test_bootstrap_is_seeded_the_same_input_gives_the_same_interval() -> None:
    rng = random.Random(3)
    pairs = [(rng.uniform(1, 2), rng.uniform(1, 2)) for _ in range(30)]
    first = bootstrap_distribution(pairs, median_ratio)
    assert first is not None and first == bootstrap_distribution(pairs, median_ratio)
    assert bootstrap_distribution(pairs[:1], median_ratio) is None


# --- the acceptance cases -------------------------------------------------------------------------


def test_null_experiment_says_no_difference_shown_with_intervals(tmp_path: Path) -> None:
    """Identical behaviour, 30 % random failure, 12 tasks x 5 repetitions, through the real CLI."""
    runs = write_cohort(tmp_path / "null.ndjson", 12, 5, 0.7, 0.7, seed=1)
    done = subprocess.run([PY, "-m", "lsp_agent", "eval", "compare", str(runs), "base", "cand", "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    success = effect(summary, "success")
    assert success["role"] == "primary" and success["pairsUsed"] == 60
    low, high = success["interval95"]
    assert low < 0 < high and success["verdict"] == NO_DIFFERENCE
    assert success["test"]["pValue"] > 0.05
    assert all(e["verdict"].startswith(NO_DIFFERENCE) for e in summary["effects"])
    assert effect(summary, "elapsedRatio")["interval95"] is not None
    for arm in ("baseline", "candidate"):
        assert summary["overall"][arm]["successRateInterval95"] is not None
    text = subprocess.run([PY, "-m", "lsp_agent", "eval", "compare", str(runs), "base", "cand"],
                          capture_output=True, text=True, timeout=120, check=False).stdout
    assert "success (primary)" in text and NO_DIFFERENCE in text and "McNemar p=" in text


def test_planted_difference_of_30_points_is_shown_with_an_interval_excluding_zero(tmp_path: Path) -> None:
    summary = compare_file(write_cohort(tmp_path / "planted.ndjson", 12, 10, 0.4, 0.7, seed=5), "base", "cand")
    success = effect(summary, "success")
    low, high = success["interval95"]
    assert 0 < low < success["estimate"] < high
    assert success["verdict"].startswith("difference shown: candidate higher")
    assert success["detectable"] < 0.3  # this cohort could see a 30-point change


def test_a_planted_loss_is_shown_as_candidate_lower(tmp_path: Path) -> None:
    summary = compare_file(write_cohort(tmp_path / "loss.ndjson", 12, 10, 0.8, 0.4, seed=6), "base", "cand")
    assert effect(summary, "success")["verdict"].startswith("difference shown: candidate lower")


def _claims(cohort: list[dict[str, Any]], primary: str, resamples: int) -> bool:
    """Whether any verdict of this cohort claims a difference."""
    runs = parse_runs([json.dumps(line) for line in cohort])
    effects = judge(twins(pair_up(runs, "base", "cand")), primary, resamples=resamples)
    return any(e["verdict"].startswith("difference shown") for e in effects)


@pytest.mark.parametrize(("tasks", "repetitions", "cohorts", "primary"),
                         [(12, 1, 300, "success"), (12, 5, 150, "success"), (12, 5, 100, "elapsedRatio"),
                          (12, 1, 200, "inputTokens")])
def test_fresh_null_cohorts_claim_a_difference_at_most_5_percent_of_the_time(
        tasks: int, repetitions: int, cohorts: int, primary: str) -> None:
    """Every verdict over every metric, on independent identical-arm cohorts (12 x 1 is the starter size)."""
    claimed = sum(_claims(synthetic_cohort(tasks, repetitions, 0.7, 0.7, seed=1000 + i), primary, resamples=200)
                  for i in range(cohorts))
    assert claimed / cohorts <= 0.05


def test_simulate_null_replays_the_cohort_with_shuffled_labels(tmp_path: Path) -> None:
    runs = load_runs(write_cohort(tmp_path / "starter.ndjson", 12, 1, 0.7, 0.7, seed=2))
    pairs = twins(pair_up(runs, "base", "cand"))
    result = simulate_null(pairs, 400)
    assert result["cohorts"] == 400 and result["withinAlpha"] and result["falsePositiveRate"] <= 0.05
    assert result == simulate_null(pairs, 400)  # seeded


def test_simulate_null_through_the_cli_in_text_and_json(tmp_path: Path) -> None:
    runs = write_cohort(tmp_path / "runs.ndjson", 12, 5, 0.7, 0.7, seed=4)
    base = [PY, "-m", "lsp_agent", "eval", "compare", str(runs), "base", "cand", "--simulate-null", "200"]
    text = subprocess.run(base, capture_output=True, text=True, timeout=120, check=False)
    assert text.returncode == 0, text.stderr
    assert "Null simulation" in text.stdout and "within the 5%" in text.stdout
    data = json.loads(subprocess.run([*base, "--json"], capture_output=True, text=True, timeout=120,
                                     check=False).stdout)
    assert data["nullSimulation"]["cohorts"] == 200 and data["nullSimulation"]["withinAlpha"]


# --- the rule for several metrics -------------------------------------------------------------------


def test_secondary_metrics_are_not_findings_when_the_primary_shows_nothing(tmp_path: Path) -> None:
    """Same success, candidate twice as slow: the time difference is visible but not claimed."""
    lines = [header(["a", "b"], 10)]
    for t in ("a", "b"):
        for r in range(1, 11):
            lines += [record(t, r, "base", elapsed=1000 + r), record(t, r, "cand", elapsed=2000 + r)]
    summary = compare_file(write_runs(tmp_path / "slow.ndjson", lines), "base", "cand")
    assert "Bonferroni" in summary["verdictRule"] and summary["primaryMetric"] == "success"
    slow = effect(summary, "elapsedRatio")
    assert slow["role"] == "secondary" and slow["interval95"][0] > 1
    assert slow["verdict"].startswith(NO_DIFFERENCE) and "primary metric showed no difference" in slow["verdict"]


def test_the_manifest_can_declare_time_as_the_primary_metric(tmp_path: Path) -> None:
    lines = [header(["a", "b"], 10)]
    lines[0]["primaryMetric"] = "elapsedRatio"
    for t in ("a", "b"):
        for r in range(1, 11):
            lines += [record(t, r, "base", elapsed=1000 + r), record(t, r, "cand", elapsed=2000 + r)]
    summary = compare_file(write_runs(tmp_path / "slow.ndjson", lines), "base", "cand")
    first = summary["effects"][0]
    assert first["metric"] == "elapsedRatio" and first["role"] == "primary"
    assert first["verdict"].startswith("difference shown: candidate higher")
    assert [e["metric"] for e in summary["effects"]][1] == "success"


def test_primary_metric_defaults_to_success_and_unknown_names_are_refused() -> None:
    data = {"model": "m/x", "runtimeRevision": "r", "arms": [{"name": "a"}, {"name": "b"}],
            "tasks": [{"id": "t", "prompt": "p", "files": [{"path": "f", "content": ""}], "oracle": ["x"]}]}
    assert Manifest.model_validate(data).primary_metric == "success"
    assert Manifest.model_validate({**data, "primaryMetric": "inputTokens"}).primary_metric == "inputTokens"
    with pytest.raises(ValueError, match="not a metric compare judges"):
        Manifest.model_validate({**data, "primaryMetric": "vibes"})
    assert set(EFFECT_NAMES) >= {"success", "elapsedRatio", "inputTokens"}


def test_compare_output_is_deterministic(tmp_path: Path) -> None:
    runs = write_cohort(tmp_path / "runs.ndjson", 12, 3, 0.6, 0.7, seed=8)
    assert compare_file(runs, "base", "cand") == compare_file(runs, "base", "cand")


def test_html_has_error_bars_and_the_verdicts(tmp_path: Path) -> None:
    summary = compare_file(write_cohort(tmp_path / "runs.ndjson", 4, 3, 0.6, 0.7, seed=9), "base", "cand",
                           simulate=50)
    page = render_html(summary)
    # one Wilson bar per arm per task and for all tasks, and the bootstrap interval of the ratio
    assert page.count('class="error-bar"') == 2 * 5 + 1
    assert '<table class="verdicts">' in page and "Null simulation" in page
    assert "Verdicts" in render_table(summary)


def test_the_example_in_the_docs_is_what_compare_prints(tmp_path: Path) -> None:
    """docs/eval.md shows real output; this keeps it true (lines left out there are marked `...`)."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "eval.md").read_text(encoding="utf-8")
    start = docs.index("## How to read every number")
    begin = docs.index("```text\n", start) + len("```text\n")
    block = docs[begin:docs.index("\n```", begin)]
    runs = write_cohort(tmp_path / "runs.ndjson", 12, 5, 0.7, 0.7, seed=1, claim_error=0.1)
    printed = render_table(compare_file(runs, "base", "cand", simulate=1000)).splitlines()
    shown = [line for line in block.splitlines() if line != "..."]
    assert len(shown) > 10 and all(line in printed for line in shown)


def test_cohorts_with_different_primary_metrics_are_not_judged_together(tmp_path: Path) -> None:
    first, second = header(["a"], 1), header(["a"], 1, cohort="d" * 64)
    second["primaryMetric"] = "elapsedRatio"
    lines = [first, second, record("a", 1, "base"), record("a", 1, "cand"),
             record("a", 1, "base", cohort="d" * 64), record("a", 1, "cand", cohort="d" * 64)]
    with pytest.raises(CompareError, match="different primary metrics"):
        compare_file(write_runs(tmp_path / "runs.ndjson", lines), "base", "cand")
