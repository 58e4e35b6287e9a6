"""lsp-agent as an Inspect AI task under `inspect_ai.eval`: the real agent, scripted model, the oracle as scorer."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest
from evalkit import FAKE, ORACLE, PY, attempts, run_cohort, task
from test_eval_cli import scripted_cohort

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log

import lsp_agent.eval.inspect_task as inspect_task_module
from lsp_agent.eval.inspect_task import lsp_agent_task
from lsp_agent.eval.proctree import is_alive


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fixtures go here, so the test can see that none is left behind."""
    where = tmp_path / "attempts"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def run(manifest: Path, arm: str, logs: Path, **kwargs: object) -> EvalLog:
    [log] = inspect_eval(lsp_agent_task(manifest, arm=arm), log_dir=str(logs), display="none", max_samples=1,
                         **kwargs)
    return log


def outcomes(log: EvalLog) -> dict[tuple[str, int], str | None]:
    assert log.samples is not None
    return {(str(s.id), s.epoch): s.scores["oracle"].answer if s.scores else None for s in log.samples}


def test_each_arm_runs_the_real_agent_and_the_oracle_scores_it_as_eval_run_does(tmp_path: Path,
                                                                              private_tmp: Path) -> None:
    manifest = scripted_cohort(tmp_path)  # baseline solves both tasks; candidate never solves task_two
    lines, _, result = run_cohort(json.loads(manifest.read_text()), base_dir=tmp_path)
    assert result.exit_code == 0
    by_eval_run = {(r["task"], r["repetition"], r["arm"]): r["outcome"] for r in attempts(lines)}
    claims = {(r["task"], r["repetition"], r["arm"]): r["harnessVerification"] for r in attempts(lines)}

    for arm in ("baseline", "candidate"):
        log = run(manifest, arm, tmp_path / "logs")
        assert log.status == "success", log.error
        assert outcomes(log) == {(t, rep): by_eval_run[(t, rep, arm)] for t in ("task_one", "task_two")
                                 for rep in (1, 2)}
        assert log.samples is not None and log.results is not None
        assert {s.scores["oracle"].value for s in log.samples if s.scores and s.id == "task_two"} == \
            ({"C"} if arm == "baseline" else {"I"})
        score = {s.name: s for s in log.results.scores}["oracle"]
        verified = sum(1 for (t, _, a), o in by_eval_run.items() if a == arm and o == "verified")
        assert score.metrics["accuracy"].value == verified / 4
        # the harness's own claim, read from its stream as `eval run` reads it, scored beside the oracle
        said = {(str(s.id), s.epoch): s.scores["harness_verification"].answer for s in log.samples if s.scores}
        assert said == {(t, rep): claims[(t, rep, arm)] for t in ("task_one", "task_two") for rep in (1, 2)}
        assert all(c is not None for c in said.values())
        meta = log.samples[0].scores["oracle"].metadata if log.samples[0].scores else None
        # the agent's own event stream, read as `eval run` reads it: 2 steps, 250 tokens in
        assert meta is not None and meta["stopReason"] == "final" and meta["metrics"]["inputTokens"] == 250
        assert meta["model"] == "scripted/eval" and meta["verificationMs"] is not None
        assert log.eval.metadata is not None and log.eval.metadata["arm"] == arm
    assert list(private_tmp.iterdir()) == []  # every fixture removed after its score


def fake_manifest(tmp_path: Path, tasks: list[dict[str, object]], timeout_ms: int = 20_000) -> Path:
    data = {"model": "fake/model", "runtimeRevision": "test", "command": [PY, FAKE], "repetitions": 1,
            "timeoutMs": timeout_ms, "arms": [{"name": "base"}, {"name": "cand"}], "tasks": tasks}
    path = tmp_path / "fake.json"
    path.write_text(json.dumps(data))
    return path


def test_a_hung_agent_is_killed_at_the_timeout_and_scored_incorrect(tmp_path: Path, private_tmp: Path) -> None:
    pids = tmp_path / "pids.json"
    manifest = fake_manifest(tmp_path, [task("hangs", {"hang": True, "grandchildren": str(pids),
                                                       "stream": "start_only"})], timeout_ms=2_000)
    log = run(manifest, "base", tmp_path / "logs")
    assert outcomes(log) == {("hangs", 1): "timeout"}
    assert log.samples is not None and log.samples[0].scores is not None
    assert log.samples[0].scores["oracle"].value == "I"
    assert not any(is_alive(pid) for pid in json.loads(pids.read_text()))  # the whole tree, own sessions too
    assert list(private_tmp.iterdir()) == []


def test_inspects_time_limit_cancels_the_sample_and_kills_the_agents_whole_tree(tmp_path: Path,
                                                                                 private_tmp: Path) -> None:
    pids = tmp_path / "pids.json"
    manifest = fake_manifest(tmp_path, [task("hangs", {"hang": True, "grandchildren": str(pids),
                                                       "stream": "start_only"})], timeout_ms=300_000)
    log = run(manifest, "base", tmp_path / "logs", time_limit=3)
    assert log.samples is not None and log.samples[0].limit is not None
    assert log.samples[0].limit.type == "time" and log.samples[0].error is None
    assert outcomes(log) == {("hangs", 1): "timeout"}  # the agent ran out of time: scored I, like a timeout
    assert not any(is_alive(pid) for pid in json.loads(pids.read_text()))
    assert list(private_tmp.iterdir()) == []


def test_an_oracle_that_passes_the_untouched_fixture_errors_the_sample_as_invalid(tmp_path: Path,
                                                                                 private_tmp: Path) -> None:
    lazy = {"id": "lazy", "prompt": json.dumps({}), "files": [{"path": "target.txt", "content": "ok"}],
            "oracle": [PY, ORACLE, "target.txt", "ok"]}  # already "done" before the agent starts
    undecided = task("undecided", {"write": {"undecidable": ""}})
    manifest = fake_manifest(tmp_path, [lazy, undecided])
    log = run(manifest, "cand", tmp_path / "logs", fail_on_error=False)
    assert log.samples is not None
    by_id = {str(s.id): s for s in log.samples}
    error = by_id["lazy"].error
    assert error is not None and "task lazy is invalid: the oracle exited 0 on the fresh fixture" in error.message
    score = by_id["undecided"].scores["oracle"] if by_id["undecided"].scores else None
    assert score is not None and (score.value, score.answer) == ("N", "completed_unverified")
    assert score.explanation is not None and "the oracle exited 2" in score.explanation
    assert list(private_tmp.iterdir()) == []


def test_an_agent_command_that_cannot_start_errors_the_sample_and_leaves_no_fixture(tmp_path: Path,
                                                                                   private_tmp: Path) -> None:
    manifest = fake_manifest(tmp_path, [task("solved", {"write": {"target.txt": "ok"}})])
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "command": [str(tmp_path / "no-such-agent")]}))
    log = run(manifest, "base", tmp_path / "logs", fail_on_error=False)
    assert log.samples is not None and log.samples[0].error is not None
    assert "the agent command cannot start" in log.samples[0].error.message
    assert list(private_tmp.iterdir()) == []  # the scorer never ran: the task's cleanup removed the fixture


def test_the_inspect_cli_runs_the_task_file_with_a_manifest_argument(tmp_path: Path) -> None:
    manifest = fake_manifest(tmp_path, [task("solved", {"write": {"target.txt": "ok"}})])
    done = subprocess.run([PY, "-m", "inspect_ai", "eval", f"{inspect_task_module.__file__}@lsp_agent_eval",
                           "-T", f"manifest={manifest}", "-T", "arm=cand", "--log-dir", str(tmp_path / "logs"),
                           "--display", "plain", "--max-samples", "1"],
                          capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.eval.task == "lsp_agent_eval_cand" and outcomes(log) == {("solved", 1): "verified"}
