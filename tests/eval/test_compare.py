"""Compare: what it refuses, and numbers that cover exactly what they say they cover."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evalkit import COHORT, header, record, write_runs

from lsp_agent.eval.compare import ALL_TASKS, CompareError, compare_file
from lsp_agent.eval.report_html import render_html
from lsp_agent.eval.report_text import render_table


def full(tasks: list[str], repetitions: int, outcome: str = "verified") -> list[dict[str, Any]]:
    lines = [header(tasks, repetitions)]
    for t in tasks:
        for r in range(1, repetitions + 1):
            lines += [record(t, r, "base", outcome), record(t, r, "cand", outcome)]
    return lines


def compare(tmp_path: Path, lines: list[dict[str, Any]], base: str = "base", cand: str = "cand") -> dict[str, Any]:
    return compare_file(write_runs(tmp_path / "runs.ndjson", lines), base, cand)


def rejected(tmp_path: Path, lines: list[dict[str, Any]], base: str = "base", cand: str = "cand") -> str:
    with pytest.raises(CompareError) as caught:
        compare(tmp_path, lines, base, cand)
    return str(caught.value)


def task_row(summary: dict[str, Any], task: str) -> dict[str, Any]:
    return next(t for t in summary["tasks"] if t["task"] == task)


def test_duplicate_records_are_rejected(tmp_path: Path) -> None:
    lines = full(["t"], 2)
    why = rejected(tmp_path, [*lines, record("t", 1, "cand")])
    assert "duplicate record for arm cand (first at line 3)" in why


def test_missing_pair_is_rejected(tmp_path: Path) -> None:
    lines = [line for line in full(["t"], 3) if not (line.get("repetition") == 2 and line.get("arm") == "cand")]
    assert "task t, repetition 2 has no record for arm cand" in rejected(tmp_path, lines)


def test_whole_missing_pair_is_found_from_the_header(tmp_path: Path) -> None:
    lines = [line for line in full(["t"], 3) if line.get("repetition") != 3]
    assert "repetition 3 has no record for arm base, cand" in rejected(tmp_path, lines)


def test_cohort_mismatch_is_rejected(tmp_path: Path) -> None:
    lines = full(["t"], 2)
    lines[-1] = record("t", 2, "cand", cohort="d" * 64)  # this half belongs to another cohort
    why = rejected(tmp_path, lines)
    assert "cohort dddddddddddd: records without a `cohort` header" in why
    assert "repetition 2 has no record for arm cand" in why


def test_model_mismatch_is_rejected(tmp_path: Path) -> None:
    lines = full(["t"], 1)
    lines[-1] = record("t", 1, "cand", model="m/other")
    assert "does not match the cohort's model" in rejected(tmp_path, lines)


def test_incomplete_cohort_is_rejected(tmp_path: Path) -> None:
    lines = [*full(["t"], 1), {"type": "incomplete", "cohort": COHORT, "reason": "cancelled", "recorded": 2,
                               "planned": 2}]
    assert "is incomplete (cancelled: 2 of 2 attempts recorded)" in rejected(tmp_path, lines)


def test_unknown_arm_is_rejected(tmp_path: Path) -> None:
    assert "unknown arm 'other'" in rejected(tmp_path, full(["t"], 1), "base", "other")


def test_identical_arm_names_are_rejected(tmp_path: Path) -> None:
    assert "same arm" in rejected(tmp_path, full(["t"], 1), "base", "base")


def test_malformed_record_line_is_rejected_with_its_number(tmp_path: Path) -> None:
    path = write_runs(tmp_path / "runs.ndjson", full(["t"], 1))
    path.write_text(path.read_text() + '{"type": "attempt", "task": 1}\n')
    with pytest.raises(CompareError, match="line 4: not an eval record"):
        compare_file(path, "base", "cand")


def test_same_cohort_twice_in_one_file_is_rejected(tmp_path: Path) -> None:
    assert "a second header" in rejected(tmp_path, [*full(["t"], 1), *full(["t"], 1)])


def test_success_rate_counts_every_attempt_with_failure_buckets(tmp_path: Path) -> None:
    lines = [header(["t"], 4),
             record("t", 1, "base"), record("t", 1, "cand"),
             record("t", 2, "base"), record("t", 2, "cand", "failed"),
             record("t", 3, "base"), record("t", 3, "cand", "timeout"),
             record("t", 4, "base", "completed_unverified"), record("t", 4, "cand")]
    s = compare(tmp_path, lines)
    cand = task_row(s, "t")["candidate"]
    assert (cand["attempts"], cand["verified"], cand["successRate"]) == (4, 2, 0.5)
    assert cand["outcomes"] == {"verified": 2, "completed_unverified": 0, "failed": 1, "timeout": 1,
                                "cancelled": 0}
    assert task_row(s, "t")["baseline"]["successRate"] == 0.75


def test_median_elapsed_is_over_verified_attempts_only(tmp_path: Path) -> None:
    lines = [header(["t"], 3),
             record("t", 1, "base", elapsed=100), record("t", 1, "cand", elapsed=100),
             record("t", 2, "base", elapsed=300), record("t", 2, "cand", "failed", elapsed=5),
             record("t", 3, "base", "timeout", elapsed=60_000), record("t", 3, "cand", elapsed=200)]
    s = compare(tmp_path, lines)
    assert task_row(s, "t")["baseline"]["elapsedMsMedianVerifiedOnly"] == 200.0  # (100 + 300) / 2
    assert task_row(s, "t")["candidate"]["elapsedMsMedianVerifiedOnly"] == 150.0  # the failed 5 ms is out


def test_paired_ratio_uses_only_pairs_where_both_are_verified(tmp_path: Path) -> None:
    lines = [header(["t"], 3),
             record("t", 1, "base", elapsed=100), record("t", 1, "cand", elapsed=50),
             record("t", 2, "base", elapsed=100), record("t", 2, "cand", elapsed=300),
             record("t", 3, "base", "failed", elapsed=100), record("t", 3, "cand", elapsed=1)]
    paired = task_row(compare(tmp_path, lines), "t")["paired"]
    assert (paired["pairs"], paired["bothVerified"], paired["ratios"]) == (3, 2, [0.5, 3.0])
    assert paired["elapsedRatioMedian"] == 1.75


def test_ratio_is_omitted_with_a_reason_when_no_pair_is_verified(tmp_path: Path) -> None:
    paired = task_row(compare(tmp_path, full(["t"], 2, "failed")), "t")["paired"]
    assert paired["elapsedRatioMedian"] is None
    assert paired["ratioOmittedReason"] == "no pair with both attempts verified"


def _p95_lines(verified: int) -> list[dict[str, Any]]:
    lines = [header(["t"], 20)]
    for r in range(1, 21):
        outcome = "verified" if r <= verified else "failed"
        lines += [record("t", r, "base", outcome, elapsed=r * 100), record("t", r, "cand", elapsed=r * 10)]
    return lines


def test_p95_is_withheld_at_19_verified_observations(tmp_path: Path) -> None:
    base = task_row(compare(tmp_path, _p95_lines(19)), "t")["baseline"]
    assert base["elapsedMsP95VerifiedOnly"] is None
    assert base["p95OmittedReason"] == "19 verified observation(s); P95 needs at least 20"


def test_p95_is_given_at_20_verified_observations_by_nearest_rank(tmp_path: Path) -> None:
    s = compare(tmp_path, _p95_lines(20))
    base = task_row(s, "t")["baseline"]
    assert base["p95OmittedReason"] is None
    assert base["elapsedMsP95VerifiedOnly"] == 1900.0  # rank ceil(0.95 * 20) = 19 of 100..2000
    assert s["overall"]["baseline"]["elapsedMsP95VerifiedOnly"] == 1900.0  # one task: still one cell


def test_p95_is_omitted_for_mixed_cells(tmp_path: Path) -> None:
    lines = [header(["a", "b"], 20)]
    for t in ("a", "b"):
        for r in range(1, 21):
            lines += [record(t, r, "base"), record(t, r, "cand")]
    s = compare(tmp_path, lines)
    assert task_row(s, "a")["baseline"]["elapsedMsP95VerifiedOnly"] == 1000.0
    overall = s["overall"]["baseline"]
    assert overall["elapsedMsP95VerifiedOnly"] is None and overall["p95OmittedReason"].startswith("mixed cells (2")


def test_missing_metrics_are_reported_as_missing_not_zero(tmp_path: Path) -> None:
    lines = [header(["t"], 3),
             record("t", 1, "base", metrics={"steps": 1, "inputTokens": 500, "outputTokens": 1,
                                             "reasoningTokens": 0, "cacheReadTokens": 0, "toolCalls": 0,
                                             "toolErrors": 0}),
             record("t", 1, "cand"),
             record("t", 2, "base", "timeout", status="partial"), record("t", 2, "cand"),
             record("t", 3, "base", status="unavailable"), record("t", 3, "cand")]
    metric = task_row(compare(tmp_path, lines), "t")["baseline"]["metrics"]["inputTokens"]
    assert metric == {"median": 500.0, "observed": 1, "missing": 2}  # zero-filling would give a median of 0


def test_invalid_tasks_are_excluded_and_listed(tmp_path: Path) -> None:
    lines = [header(["good", "bad"], 1), record("good", 1, "base"), record("good", 1, "cand"),
             {"type": "task_invalid", "cohort": COHORT, "task": "bad", "reason": "the oracle exited 0"}]
    s = compare(tmp_path, lines)
    assert [t["task"] for t in s["tasks"]] == ["good"]
    assert s["invalidTasks"] == [{"cohort": COHORT, "task": "bad", "reason": "the oracle exited 0"}]


def test_all_tasks_invalid_cannot_be_compared(tmp_path: Path) -> None:
    lines = [header(["bad"], 1), {"type": "task_invalid", "cohort": COHORT, "task": "bad", "reason": "x"}]
    assert "no valid task" in rejected(tmp_path, lines)


def test_table_labels_what_each_number_covers(tmp_path: Path) -> None:
    text = render_table(compare(tmp_path, full(["t"], 2)))
    assert "Success rate over ALL attempts" in text
    assert "VERIFIED attempts only" in text and "median (verified only)" in text
    assert "pairs where BOTH attempts are verified" in text
    assert "never counted as 0" in text
    assert "100.0% (2/2)" in text and ALL_TASKS in text


def test_html_report_is_self_contained(tmp_path: Path) -> None:
    page = render_html(compare(tmp_path, full(["t", "u"], 2)))
    assert page.startswith("<!doctype html>") and page.count("<svg") == 2
    for forbidden in ("<script", "http://", "https://", "src=", "href=", "@import", "url("):
        assert forbidden not in page


def test_html_escapes_names(tmp_path: Path) -> None:
    lines = [header(["t"], 1, arms=("<b>", "cand")), record("t", 1, "<b>"), record("t", 1, "cand")]
    page = render_html(compare(tmp_path, lines, "<b>", "cand"))
    assert "<b>" not in page and "&lt;b&gt;" in page


def test_json_summary_round_trips(tmp_path: Path) -> None:
    s = compare(tmp_path, full(["t"], 1))
    assert json.loads(json.dumps(s)) == s
    assert set(s) >= {"baseline", "candidate", "cohorts", "invalidTasks", "tasks", "overall", "definitions"}


def test_a_resume_line_supersedes_the_incomplete_marker_and_cancelled_attempts(tmp_path: Path) -> None:
    incomplete = {"type": "incomplete", "cohort": COHORT, "reason": "lost", "recorded": 1, "planned": 2}
    resume = {"type": "resume", "cohort": COHORT, "missing": 1}
    first = [header(["t"], 1), record("t", 1, "base", outcome="cancelled"), record("t", 1, "cand"), incomplete]
    with pytest.raises(CompareError, match="incomplete"):
        compare_file(write_runs(tmp_path / "a.ndjson", first), "base", "cand")
    resumed = compare_file(write_runs(tmp_path / "b.ndjson", [*first, resume, record("t", 1, "base", elapsed=500)]),
                           "base", "cand")
    assert resumed["overall"]["baseline"]["outcomes"]["cancelled"] == 0
    assert resumed["overall"]["paired"]["ratios"] == [2.0]
    # A resumed run that is itself interrupted is incomplete again.
    again = [*first, resume, record("t", 1, "base", outcome="cancelled"), incomplete]
    with pytest.raises(CompareError, match="incomplete"):
        compare_file(write_runs(tmp_path / "c.ndjson", again), "base", "cand")
    # Only cancelled attempts are superseded: a verified one recorded twice is still a duplicate.
    twice = [header(["t"], 1), record("t", 1, "base"), record("t", 1, "cand"), resume, record("t", 1, "base")]
    with pytest.raises(CompareError, match="duplicate"):
        compare_file(write_runs(tmp_path / "d.ndjson", twice), "base", "cand")
