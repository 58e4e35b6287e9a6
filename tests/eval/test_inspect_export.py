"""`eval export-inspect`: records from the real runner become Inspect AI logs that Inspect reads and serves."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from evalkit import PY, attempts, header, manifest, record, run_cohort, task, write_runs
from fake_agent import NORMAL_TOTALS

pytest.importorskip("inspect_ai")

from inspect_ai.log import read_eval_log

from lsp_agent.eval.compare import parse_runs
from lsp_agent.eval.inspect_log import arm_log
from lsp_agent.eval.records import AttemptRecord

EVAL = [PY, "-m", "lsp_agent", "eval"]
SCORE_OF = {"verified": "C", "failed": "I", "timeout": "I", "completed_unverified": "N", "cancelled": "N"}


def export(runs: Path, out: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EVAL, "export-inspect", str(runs), str(out)], capture_output=True, text=True,
                          timeout=180, check=False, env=env)


def mixed_cohort(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The fake agent through the real runner: solved, not solved, undecidable, timed out; two repetitions."""
    tasks = [task("solved", {"write": {"target.txt": "ok"}}),
             task("unsolved", {"write": {"target.txt": "nope"}}),
             task("undecided", {"write": {"undecidable": "", "target.txt": "ok"}}),
             task("hangs", {"hang": True, "stream": "start_only"})]
    lines, _, result = run_cohort(manifest(tasks, repetitions=2, timeout_ms=3_000))
    assert result.exit_code == 0
    return write_runs(tmp_path / "runs.ndjson", lines), attempts(lines)


def test_export_writes_one_log_per_arm_that_inspect_reads_back_with_the_oracle_scores(tmp_path: Path) -> None:
    runs, records = mixed_cohort(tmp_path)
    done = export(runs, tmp_path / "logs")
    assert done.returncode == 0, done.stderr
    logs = sorted((tmp_path / "logs").iterdir())
    assert [p.name.split("-", 1)[1] for p in logs] == ["base.eval", "cand.eval"]
    assert str(logs[0]) in done.stdout and "8 attempt(s)" in done.stdout

    for path in logs:
        arm = path.stem.split("-", 1)[1]
        log = read_eval_log(str(path))
        mine = {(r["task"], r["repetition"]): r for r in records if r["arm"] == arm}
        assert log.status == "success" and log.eval.model == "fake/model" and log.eval.config.epochs == 2
        assert log.eval.dataset.sample_ids == ["solved", "unsolved", "undecided", "hangs"]
        assert log.samples is not None and len(log.samples) == len(mine) == 8
        for sample in log.samples:
            rec = mine[(str(sample.id), sample.epoch)]
            assert sample.scores is not None
            oracle = sample.scores["oracle"]
            assert (oracle.value, oracle.answer) == (SCORE_OF[rec["outcome"]], rec["outcome"])
            assert sample.total_time == rec["elapsedMs"] / 1000
            assert sample.metadata["position"] == rec["position"] and sample.metadata["arm"] == arm
        outcomes = {(str(s.id), s.epoch): s.scores["oracle"].answer for s in log.samples if s.scores}
        assert outcomes == {(t, rep): o for t, o in (("solved", "verified"), ("unsolved", "failed"),
                                                      ("undecided", "completed_unverified"), ("hangs", "timeout"))
                            for rep in (1, 2)}
        assert log.results is not None
        scores = {s.name: s for s in log.results.scores}
        score = scores["oracle"]
        # the fake agent's run_finish says "not_run"; a killed run said nothing: no claim of success anywhere
        assert scores["harness_verification"].metrics["accuracy"].value == 0.0
        claimed = {(str(s.id), s.scores["harness_verification"].answer) for s in log.samples if s.scores}
        assert claimed == {(r["task"], r["harnessVerification"]) for r in mine.values()}
        assert {c for _, c in claimed} == {"not_run", None}
        verified = sum(r["outcome"] == "verified" for r in mine.values())
        assert score.name == "oracle" and score.metrics["accuracy"].value == verified / len(mine) == 0.25
        # tokens: the six attempts whose stream was read whole; the two timed-out ones withheld theirs
        usage = log.stats.model_usage["fake/model"]
        observed = sum(r["metricsStatus"] == "observed" for r in mine.values())
        assert observed == 6
        assert (usage.input_tokens, usage.output_tokens, usage.input_tokens_cache_read) == (
            observed * NORMAL_TOTALS["inputTokens"], observed * NORMAL_TOTALS["outputTokens"],
            observed * NORMAL_TOTALS["cacheReadTokens"])
        hung = next(s for s in log.samples if s.id == "hangs")
        assert hung.model_usage == {} and hung.metadata["metricsStatus"] == "partial"

    again = export(runs, tmp_path / "again")
    assert again.returncode == 0, again.stderr
    for path in logs:  # the same records give the same logs
        first, second = read_eval_log(str(path)), read_eval_log(str(tmp_path / "again" / path.name))
        assert first.model_dump(exclude={"location"}) == second.model_dump(exclude={"location"})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


@contextlib.contextmanager
def inspect_view(log_dir: Path) -> Iterator[str]:
    """`inspect view` on a free loopback port, answering; yields its base URL."""
    port = _free_port()
    view = subprocess.Popen([PY, "-m", "inspect_ai", "view", "start", "--log-dir", str(log_dir),
                             "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _get(f"{url}/api/log-files")
                break
            except (urllib.error.URLError, ConnectionError):
                assert view.poll() is None, view.stderr.read() if view.stderr else ""
                assert time.monotonic() < deadline, "inspect view did not answer within 120 s"
                time.sleep(0.2)
        yield url
    finally:
        view.terminate()
        try:
            view.wait(timeout=30)
        except subprocess.TimeoutExpired:
            view.kill()
            view.wait()


def two_task_runs(tmp_path: Path) -> Path:
    return write_runs(tmp_path / "runs.ndjson", [
        header(["t1", "t2"], 1), record("t1", 1, "base"), record("t1", 1, "cand", outcome="failed"),
        record("t2", 1, "base", outcome="timeout", status="partial"), record("t2", 1, "cand")])


def test_inspect_view_lists_and_serves_the_exported_logs(tmp_path: Path) -> None:
    assert export(two_task_runs(tmp_path), tmp_path / "logs").returncode == 0
    with inspect_view(tmp_path / "logs") as url:
        listing = _get(f"{url}/api/log-files")
        names = sorted(f["name"] for f in listing["files"])
        assert [n.rsplit("/", 1)[1] for n in names] == ["cccccccccccc-base.eval", "cccccccccccc-cand.eval"]
        assert sorted(f["task"] for f in listing["files"]) == ["lsp_agent_eval_base", "lsp_agent_eval_cand"]
        served = [_get(f"{url}/api/logs/{urllib.parse.quote(name, safe='')}") for name in names]
        assert [s["status"] for s in served] == ["success", "success"]
        assert [[x["scores"]["oracle"]["value"] for x in s["samples"]] for s in served] == [["C", "I"], ["I", "C"]]


@pytest.mark.realhost
def test_the_viewer_app_in_chromium_opens_an_exported_log_and_shows_its_samples(tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no chromium on PATH (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    assert export(two_task_runs(tmp_path), tmp_path / "logs").returncode == 0
    with inspect_view(tmp_path / "logs") as url, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page()
            page.goto(url + "/")
            page.get_by_text("lsp_agent_eval_cand").first.wait_for(timeout=60_000)  # the log list
            page.get_by_text("lsp_agent_eval_cand").first.click()
            page.get_by_text("(task t2: prompts are not recorded)").first.wait_for(timeout=60_000)  # its samples
            text = page.inner_text("body")
            assert "oracle" in text and "failed" in text and "verified" in text
        finally:
            browser.close()


def test_an_interrupted_cohort_exports_with_inspects_own_status(tmp_path: Path) -> None:
    cut = {"type": "incomplete", "cohort": "c" * 64, "reason": "cancelled", "recorded": 1, "planned": 2}
    lost = {**cut, "reason": "lost"}
    for marker, status in ((cut, "cancelled"), (lost, "error")):
        runs = write_runs(tmp_path / f"{status}.ndjson", [header(["t1"], 1), record("t1", 1, "base"), marker])
        assert export(runs, tmp_path / status).returncode == 0
        log = read_eval_log(str(tmp_path / status / "cccccccccccc-base.eval"))
        assert log.status == status and log.results is not None
        assert (log.results.total_samples, log.results.completed_samples) == (1, 1)
        empty = read_eval_log(str(tmp_path / status / "cccccccccccc-cand.eval"))
        assert empty.samples == [] and empty.status == status
    assert "--resume" in (log.error.message if log.error else "")


def test_records_that_do_not_fit_are_refused_with_every_reason(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "bad.ndjson", [
        header(["t1"], 1), record("t1", 1, "base"), record("t1", 1, "base"), record("t9", 1, "base"),
        record("t1", 1, "base", cohort="d" * 64)])
    done = export(runs, tmp_path / "logs")
    assert done.returncode == 1 and not (tmp_path / "logs").exists()
    assert "duplicate record for task t1" in done.stderr and "do not fit cohort" in done.stderr
    assert "has no `cohort` header line" in done.stderr
    (tmp_path / "junk.ndjson").write_text('{"type": "attempt"}\n')
    assert "not an eval record" in export(tmp_path / "junk.ndjson", tmp_path / "logs").stderr
    missing = export(tmp_path / "nope.ndjson", tmp_path / "logs")
    assert missing.returncode == 2 and "is not a file" in missing.stderr


def test_without_the_extra_the_command_names_it(tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()  # an `inspect_ai` that cannot be imported, as on a machine without the extra
    (shim / "inspect_ai.py").write_text("raise ModuleNotFoundError(\"No module named 'inspect_ai'\")\n")
    runs = write_runs(tmp_path / "runs.ndjson", [header(["t1"], 1), record("t1", 1, "base")])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim), os.environ.get("PYTHONPATH", "")])}
    done = export(runs, tmp_path / "logs", env=env)
    assert done.returncode == 2 and "pip install 'lsp-agent[inspect]'" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    task_import = subprocess.run([PY, "-c", "import lsp_agent.eval.inspect_task"], capture_output=True, text=True,
                                 env=env, timeout=120, check=False)
    assert task_import.returncode == 1 and "lsp-agent[inspect]" in task_import.stderr
    plain = subprocess.run([*EVAL, "compare", "--help"], capture_output=True, text=True, env=env, timeout=120,
                           check=False)
    assert plain.returncode == 0  # the rest of eval does not need it


def test_the_harness_claim_becomes_a_second_score_beside_the_oracle() -> None:
    runs = parse_runs([json.dumps(header(["t1", "t2"], 1))])
    head = runs.headers["c" * 64]
    claims = [("t1", "verified", "verified"), ("t2", "failed", "verified")]  # the second is a false "verified"
    records = [
        AttemptRecord.model_validate_json(json.dumps({**record(task_id, 1, "base", outcome=outcome),
                                          "harnessVerification": claim}))
        for task_id, outcome, claim in claims]
    log = arm_log(runs, head, "base", records, datetime(2026, 1, 1, tzinfo=UTC))
    assert log.samples is not None
    harness = [s.scores["harness_verification"] for s in log.samples if s.scores]
    assert [(h.value, h.answer) for h in harness] == [("C", "verified"), ("C", "verified")]
    assert [h.metadata["agreesWithOracle"] for h in harness if h.metadata] == [True, False]
    assert log.results is not None
    by_name = {s.name: s.metrics["accuracy"].value for s in log.results.scores}
    assert by_name == {"oracle": 0.5, "harness_verification": 1.0}
    if all(r.model_dump().get("started_at") is None for r in records):
        assert log.eval.created == "2026-01-01T00:00:00+00:00"  # records without start times: the fallback
        assert (log.stats.started_at, log.stats.completed_at) == ("", "")  # unknown, not made up


class _WithStartTime(AttemptRecord):
    """A record as newer runners write it: with the attempt's start time."""

    started_at: str | None = None


def test_recorded_start_times_give_the_logs_and_samples_their_times() -> None:
    runs = parse_runs([json.dumps(header(["t1", "t2"], 1))])
    starts = [("t1", "2026-03-01T10:00:05Z", 2_000), ("t2", "2026-03-01T10:00:00Z", 1_500)]
    records: list[AttemptRecord] = [
        _WithStartTime.model_validate_json(json.dumps({**record(t, 1, "base", elapsed=ms), "startedAt": when}))
        for t, when, ms in starts]
    log = arm_log(runs, runs.headers["c" * 64], "base", records, datetime(2026, 1, 1, tzinfo=UTC))
    assert log.eval.created == "2026-03-01T10:00:00+00:00"  # the earliest attempt, not the fallback
    assert (log.stats.started_at, log.stats.completed_at) == ("2026-03-01T10:00:00+00:00",
                                                              "2026-03-01T10:00:07+00:00")
    assert log.samples is not None
    first = next(s for s in log.samples if s.id == "t1")
    assert (first.started_at, first.completed_at) == ("2026-03-01T10:00:05+00:00", "2026-03-01T10:00:07+00:00")


def test_invalid_tasks_are_left_out_of_the_dataset_and_named_in_the_metadata() -> None:
    invalid = {"type": "task_invalid", "cohort": "c" * 64, "task": "t2", "reason": "the oracle exited 0 ..."}
    runs = parse_runs([json.dumps(header(["t1", "t2"], 2)), json.dumps(invalid)])
    records = [AttemptRecord.model_validate_json(json.dumps(record("t1", rep, "cand"))) for rep in (1, 2)]
    log = arm_log(runs, runs.headers["c" * 64], "cand", records, datetime(2026, 1, 1, tzinfo=UTC))
    assert log.eval.dataset.sample_ids == ["t1"] and log.eval.dataset.samples == 1
    assert log.results is not None and (log.results.total_samples, log.results.completed_samples) == (2, 2)
    assert log.eval.metadata is not None and log.eval.metadata["invalidTasks"] == {"t2": "the oracle exited 0 ..."}
