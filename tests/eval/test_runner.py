"""The runner with a fake agent (a real subprocess): every outcome, the process tree, the records."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from evalkit import FAKE, HERE, PY, attempts, manifest, pids_in, run_cohort, task
from fake_agent import NORMAL_TOTALS

from lsp_agent.eval.manifest import Arm
from lsp_agent.eval.proctree import is_alive
from lsp_agent.eval.runner import config_pairs

FIX: dict[str, Any] = {"write": {"target.txt": "ok"}}


#: One task per behaviour, all in one cohort (process start-up is what these tests cost).
PLANS: dict[str, dict[str, Any]] = {
    "fixed": FIX,
    "unfixed": {},
    "undecidable": {"write": {"target.txt": "ok", "undecidable": ""}},
    "exit1": FIX | {"exit": 1},
    "bytewise": FIX | {"bytewise": True},
    "duplicate": FIX | {"stream": "duplicate"},
    "conflict": FIX | {"stream": "conflict"},
    "oversized": FIX | {"stream": "oversized"},
    "silent": FIX | {"stream": "none"},
}


@pytest.fixture(scope="module")
def shared() -> dict[str, dict[str, Any]]:
    lines, _, result = run_cohort(manifest([task(name, plan) for name, plan in PLANS.items()]), jobs=2)
    records = attempts(lines)
    assert len(records) == 2 * len(PLANS) and result.exit_code == 0
    return {r["task"]: r for r in records if r["arm"] == "base"}


def wait_dead(pids: list[int], seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = [p for p in pids if is_alive(p)]
        if not alive:
            return []
        time.sleep(0.05)
    return [p for p in pids if is_alive(p)]


def test_fixed_task_is_verified_with_exact_metrics(shared: dict[str, dict[str, Any]]) -> None:
    record = shared["fixed"]
    assert record["outcome"] == "verified"
    assert record["metricsStatus"] == "observed" and record["metrics"] == NORMAL_TOTALS
    assert record["exitCode"] == 0 and record["stopReason"] == "final"
    assert 0 <= record["verificationMs"] <= record["elapsedMs"]


def test_unfixed_task_is_failed_and_counts_its_metrics(shared: dict[str, dict[str, Any]]) -> None:
    record = shared["unfixed"]
    assert record["outcome"] == "failed" and record["metricsStatus"] == "observed"


def test_oracle_that_cannot_decide_gives_completed_unverified(shared: dict[str, dict[str, Any]]) -> None:
    record = shared["undecidable"]
    assert record["outcome"] == "completed_unverified" and record["verificationMs"] is not None


def test_agent_exit_code_does_not_decide_success(shared: dict[str, dict[str, Any]]) -> None:
    record = shared["exit1"]
    assert (record["outcome"], record["exitCode"]) == ("verified", 1)


def test_timeout_kills_the_whole_process_tree(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids.json"
    plan = FIX | {"grandchildren": str(pidfile), "hang": True, "stream": "start_only"}
    started = time.monotonic()
    lines, _, result = run_cohort(manifest([task("t", plan)], timeout_ms=1500, repetitions=1))
    assert time.monotonic() - started < 15
    records = attempts(lines)
    assert [r["outcome"] for r in records] == ["timeout", "timeout"]
    assert all(r["verificationMs"] is None and r["exitCode"] is None for r in records)
    assert all(1500 <= r["elapsedMs"] < 5000 for r in records)
    assert all((r["metricsStatus"], r["metrics"], r["metricsIssue"]) == ("partial", None, "interrupted")
               for r in records)
    # agent, a grandchild in its group and one in a session of its own: none survives
    assert wait_dead(pids_in(pidfile)) == []
    assert result.exit_code == 0  # timeouts are outcomes, not interruptions


def test_background_process_left_by_the_agent_is_killed(tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.json"
    lines, _, _ = run_cohort(manifest([task("t", FIX | {"background": str(pidfile)})]))
    record = attempts(lines)[-1]
    assert record["outcome"] == "verified"
    assert wait_dead(pids_in(pidfile)) == []


def test_oracle_that_already_passes_makes_the_task_invalid(tmp_path: Path) -> None:
    marker = tmp_path / "ran.json"
    good = task("good", FIX)
    passes = task("already", {"argv_to": str(marker)}, start="ok")
    lines, err, result = run_cohort(manifest([good, passes]))
    invalid = [line for line in lines if line["type"] == "task_invalid"]
    assert [(i["task"], "exited 0" in i["reason"]) for i in invalid] == [("already", True)]
    assert {r["task"] for r in attempts(lines)} == {"good"}
    assert not marker.exists()  # the agent never ran on it
    assert "task already is INVALID" in err
    assert result.exit_code == 3


FLAKY = "import pathlib, sys; c = pathlib.Path(sys.argv[1]); n = int(c.read_text() or 0) + 1; c.write_text(str(n)); " \
        "sys.exit(0 if n == 2 else 1)"


def test_oracle_that_passes_on_an_attempts_fresh_fixture_invalidates_the_task(tmp_path: Path) -> None:
    counter = tmp_path / "calls"
    counter.write_text("")
    marker = tmp_path / "ran.json"
    flaky = task("flaky", {"argv_to": str(marker)}) | {"oracle": [PY, "-c", FLAKY, str(counter)]}
    lines, err, result = run_cohort(manifest([flaky, task("good", FIX)]))
    invalid = [line for line in lines if line["type"] == "task_invalid"]
    assert len(invalid) == 1 and "repetition 1, arm base" in invalid[0]["reason"]
    assert {r["task"] for r in attempts(lines)} == {"good"} and not marker.exists()
    assert result.exit_code == 3
    assert "attempt 2 of 2 " in err  # the skipped attempts leave the plan


def test_events_fed_one_byte_at_a_time_are_counted_exactly(shared: dict[str, dict[str, Any]]) -> None:
    record = shared["bytewise"]
    assert (record["metricsStatus"], record["metrics"]) == ("observed", NORMAL_TOTALS)


def test_duplicate_part_ids_count_once(shared: dict[str, dict[str, Any]]) -> None:
    record = shared["duplicate"]
    assert record["metrics"] == NORMAL_TOTALS


def test_conflicting_part_ids_withhold_totals_but_not_the_outcome(shared: dict[str, dict[str, Any]]) -> None:
    record = shared["conflict"]
    assert (record["outcome"], record["metricsStatus"], record["metrics"], record["metricsIssue"]) == \
        ("verified", "partial", None, "conflicting_part_id")


def test_oversized_event_line_withholds_totals(shared: dict[str, dict[str, Any]]) -> None:
    record = shared["oversized"]
    assert (record["metricsStatus"], record["metricsIssue"]) == ("partial", "line_too_long")


def test_agent_without_events_has_unavailable_metrics(shared: dict[str, dict[str, Any]]) -> None:
    record = shared["silent"]
    assert (record["outcome"], record["metricsStatus"], record["metrics"]) == ("verified", "unavailable", None)


def test_arm_order_alternates_between_repetitions() -> None:
    lines, _, _ = run_cohort(manifest([task("t", FIX)], repetitions=3))
    order = [(r["repetition"], r["arm"], r["position"]) for r in attempts(lines)]
    assert order == [(1, "base", 0), (1, "cand", 1), (2, "cand", 0), (2, "base", 1), (3, "base", 0), (3, "cand", 1)]


def test_agent_gets_one_fixed_invocation_with_the_arm_settings(tmp_path: Path) -> None:
    seen = tmp_path / "argv.json"
    arms: list[dict[str, Any]] = [{"name": "base"},
            {"name": "cand", "features": {"tail_reminders": True}, "toolProfile": "minimal",
             "config": {"maxSteps": 7, "providers": {"x": {"headers": {"Authorization": "Bearer SECRET-TOKEN"}}}}}]
    data = manifest([task("t", FIX | {"argv_to": str(seen)})], arms=arms)
    data["tasks"][0]["prompt"] = json.dumps(FIX | {"argv_to": str(seen), "note": "PROMPT-TEXT-XYZ"})
    lines, err, _ = run_cohort(data)
    info = json.loads(seen.read_text())  # the last attempt: repetition 1, candidate second
    argv = info["argv"]
    assert argv[:5] == ["--workspace", info["cwd"], "--model", "fake/model", "--json"]
    configs = [argv[i + 1] for i, a in enumerate(argv) if a == "--config"]
    assert configs == config_pairs(Arm.model_validate(arms[1]), str(HERE))
    assert "toolProfile=minimal" in configs and "experimental.tail_reminders=true" in configs
    assert "experimental.context_recovery=false" in configs  # unset flags are pinned off
    assert 'providers.x.headers.Authorization="Bearer SECRET-TOKEN"' in configs
    assert argv[-2] == "--" and "PROMPT-TEXT-XYZ" in argv[-1]
    assert info["state"] and not info["state"].startswith(info["cwd"])  # private state, outside the fixture
    everything = json.dumps(lines) + err
    assert "PROMPT-TEXT-XYZ" not in everything and "SECRET-TOKEN" not in everything


def test_records_hold_no_subprocess_output() -> None:
    lines, err, _ = run_cohort(manifest([task("t", FIX)]))
    text = json.dumps(lines) + err
    assert "ses_fake" not in text and "OK: written" not in text and "done" not in text.replace("\"done\"", "")


def test_progress_lines_count_attempts_and_give_an_eta() -> None:
    _, err, _ = run_cohort(manifest([task("t", FIX)]))
    progress = [line for line in err.splitlines() if "attempt" in line and " of " in line]
    assert [line.split(" · ")[0] for line in progress] == [f"eval: attempt {k} of 2" for k in (1, 2)]
    assert all("ETA" in line for line in progress)


def test_parallel_jobs_give_the_same_records() -> None:
    lines, _, result = run_cohort(manifest([task("a", FIX), task("b", {})]), jobs=4)
    got = sorted((r["task"], r["repetition"], r["arm"], r["position"], r["outcome"]) for r in attempts(lines))
    assert len(got) == 4 and result.exit_code == 0
    assert {(t, o) for t, *_, o in got} == {("a", "verified"), ("b", "failed")}


def test_agent_that_cannot_start_aborts_the_cohort_as_incomplete() -> None:
    lines, err, result = run_cohort(manifest([task("t", FIX)], command=["/nonexistent/agent"]))
    assert [line["type"] for line in lines] == ["cohort", "incomplete"]
    assert lines[-1]["reason"] == "error" and result.exit_code == 1
    assert "cannot start" in err


def test_header_describes_the_cohort_without_prompts() -> None:
    lines, _, _ = run_cohort(manifest([task("t", FIX)]))
    head = lines[0]
    assert head["type"] == "cohort" and head["tasks"] == ["t"] and head["attempts"] == 2
    assert len(head["cohort"]) == 64 and all(r["cohort"] == head["cohort"] for r in attempts(lines))
    assert "prompt" not in json.dumps(head) and FAKE not in json.dumps(head) and PY not in json.dumps(head)


def test_fixture_is_a_clean_git_repo_with_the_task_files_committed_identically() -> None:
    import subprocess

    from lsp_agent.eval.fixture import build_fixture
    from lsp_agent.eval.manifest import Task

    spec = Task.model_validate({"id": "t", "prompt": "p", "oracle": ["x"],
                                "files": [{"path": "src/a.py", "content": "x = 1\n"},
                                          {"path": ".lsp-agent/config.toml", "content": ""}]})
    one, two = build_fixture(spec, "t"), build_fixture(spec, "t")
    try:
        def git(root: Path, *args: str) -> str:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

        assert one.work != two.work and (one.work / "src/a.py").read_text() == "x = 1\n"
        assert git(one.work, "status", "--porcelain") == ""
        assert git(one.work, "ls-files").split() == [".lsp-agent/config.toml", "src/a.py"]
        assert git(one.work, "rev-parse", "HEAD") == git(two.work, "rev-parse", "HEAD")
        assert not one.state.is_relative_to(one.work)
    finally:
        one.remove()
        two.remove()
    assert not one.base.exists()


def test_attempt_dirs_are_removed_after_each_attempt(tmp_path: Path) -> None:
    seen = tmp_path / "argv.json"
    run_cohort(manifest([task("t", FIX | {"argv_to": str(seen)})]))
    workspace = Path(json.loads(seen.read_text())["cwd"])
    assert not workspace.exists() and not workspace.parent.exists()
