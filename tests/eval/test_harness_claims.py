"""The harness's own end-of-run claim against the oracle: recorded per attempt, reported first."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from evalkit import ORACLE, PY, attempts, header, manifest, record, run_cohort, task, write_runs

from lsp_agent.eval.compare import compare_file
from lsp_agent.eval.report_html import render_html
from lsp_agent.eval.report_text import render_table


def claimed(t: str, r: int, arm: str, outcome: str, claim: str | None) -> dict[str, Any]:
    line = record(t, r, arm, outcome)
    line["harnessVerification"] = claim
    return line


def test_the_runner_records_the_claim_from_run_finish() -> None:
    plans = {
        "honest": {"write": {"target.txt": "ok"}, "claim": "verified"},
        "overclaims": {"claim": "verified"},  # claims verified, leaves the file unfixed
        "underclaims": {"write": {"target.txt": "ok"}, "claim": "failed"},
        "no_finish": {"write": {"target.txt": "ok"}, "stream": "no_finish"},
        "default": {"write": {"target.txt": "ok"}},
    }
    lines, _, result = run_cohort(manifest([task(name, plan) for name, plan in plans.items()]), jobs=2)
    assert result.exit_code == 0
    got = {r["task"]: (r["outcome"], r["harnessVerification"]) for r in attempts(lines) if r["arm"] == "base"}
    assert got == {"honest": ("verified", "verified"), "overclaims": ("failed", "verified"),
                   "underclaims": ("verified", "failed"), "no_finish": ("verified", None),
                   "default": ("verified", "not_run")}


def test_false_verified_and_false_failed_are_counted_per_arm_with_intervals(tmp_path: Path) -> None:
    lines = [header(["a"], 6),
             claimed("a", 1, "base", "verified", "verified"), claimed("a", 1, "cand", "failed", "verified"),
             claimed("a", 2, "base", "failed", "failed"), claimed("a", 2, "cand", "verified", "failed"),
             claimed("a", 3, "base", "verified", "verified"), claimed("a", 3, "cand", "verified", "verified"),
             claimed("a", 4, "base", "verified", "not_run"), claimed("a", 4, "cand", "timeout", None),
             claimed("a", 5, "base", "failed", "verified"), claimed("a", 5, "cand", "verified", None),
             claimed("a", 6, "base", "completed_unverified", "verified"),
             claimed("a", 6, "cand", "failed", "failed")]
    summary = compare_file(write_runs(tmp_path / "runs.ndjson", lines), "base", "cand")
    base, cand = summary["harnessVsOracle"]["baseline"], summary["harnessVsOracle"]["candidate"]
    assert base["decided"] == 4 and base["falseVerified"]["count"] == 1 and base["falseVerified"]["of"] == 3
    assert base["falseFailed"] == {"count": 0, "of": 1, "rate": 0.0, "interval95": [0.0, base["falseFailed"]
                                                                                   ["interval95"][1]]}
    assert base["harnessNotRun"] == 1 and base["oracleUndecided"] == 1
    assert cand["decided"] == 4 and cand["falseVerified"]["count"] == 1 and cand["falseFailed"]["count"] == 1
    assert cand["agreement"]["count"] == 2 and cand["noClaimRecorded"] == 2
    low, high = cand["falseVerified"]["interval95"]
    assert low < cand["falseVerified"]["rate"] < high


def test_the_claim_table_comes_first_in_text_json_and_html(tmp_path: Path) -> None:
    lines = [header(["a"], 1), claimed("a", 1, "base", "failed", "verified"),
             claimed("a", 1, "cand", "verified", "verified")]
    summary = compare_file(write_runs(tmp_path / "runs.ndjson", lines), "base", "cand")
    # the first table after the arms' names (a warning about mixed builds, when any, goes above everything)
    assert next(k for k in summary if k not in ("warnings", "baseline", "candidate")) == "harnessVsOracle"
    text = render_table(summary)
    first_table = text.index("Harness claim vs oracle")
    assert first_table < text.index("Verdicts") < text.index("Success rate over ALL attempts")
    assert "1/1 = 100.0%" in text  # the baseline's one 'verified' claim was false
    page = render_html(summary)
    assert page.index('<table class="claims">') < page.index("<table", page.index('<table class="claims">') + 1)
    assert page.index('<table class="claims">') == page.index("<table")


def test_records_without_a_claim_still_parse_and_count_as_no_claim(tmp_path: Path) -> None:
    lines = [header(["a"], 1), record("a", 1, "base"), record("a", 1, "cand")]
    summary = compare_file(write_runs(tmp_path / "runs.ndjson", lines), "base", "cand")
    assert summary["harnessVsOracle"]["baseline"]["noClaimRecorded"] == 1
    assert summary["harnessVsOracle"]["baseline"]["agreement"]["rate"] is None


LENIENT_CHECK = "import pathlib, sys\nsys.exit(0 if pathlib.Path('answer.txt').exists() else 1)\n"


def _script(value: str) -> dict[str, Any]:
    """Write answer.txt, run the workspace's own check with verify_project, then stop."""
    return {"label": "claims", "replies": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "answer.txt", "content": value}}],
         "usage": {"input": 100, "output": 10}},
        {"tool_calls": [{"name": "verify_project", "arguments": {}}], "usage": {"input": 120, "output": 5}},
        {"text": "done", "usage": {"input": 150, "output": 5}},
    ]}


def test_the_real_agent_claim_is_measured_against_the_oracle(tmp_path: Path) -> None:
    """The real `lsp-agent run`: its own check only asks that answer.txt exists, the oracle wants "1".
    The arm that writes "9" gets a green tick from the harness and a failure from the oracle."""
    scripts = {}
    for arm, value in (("honest", "1"), ("sloppy", "9")):
        scripts[arm] = tmp_path / f"{arm}.json"
        scripts[arm].write_text(json.dumps(_script(value)))
    config = f'[[tools.verify]]\nkind = "test"\nparser = "generic"\nargv = [{json.dumps(PY)}, "check.py"]\n'
    data = {"model": "scripted/eval", "runtimeRevision": "test", "repetitions": 1, "timeoutMs": 60_000,
            "arms": [{"name": "honest", "config": {"script": str(scripts["honest"])}},
                     {"name": "sloppy", "config": {"script": str(scripts["sloppy"])}}],
            "tasks": [{"id": "answer", "prompt": "Write 1 into answer.txt and verify.",
                       "files": [{"path": ".lsp-agent/config.toml", "content": config},
                                 {"path": "check.py", "content": LENIENT_CHECK}],
                       "oracle": [PY, ORACLE, "answer.txt", "1"]}]}
    manifest_path = tmp_path / "manifest.json"
    manifest_path.write_text(json.dumps(data))
    run = subprocess.run([PY, "-m", "lsp_agent", "eval", "run", str(manifest_path), "--jobs", "2"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    got = {r["arm"]: (r["outcome"], r["harnessVerification"]) for r in map(json.loads, run.stdout.splitlines())
           if r["type"] == "attempt"}
    assert got == {"honest": ("verified", "verified"), "sloppy": ("failed", "verified")}
    runs = tmp_path / "runs.ndjson"
    runs.write_text(run.stdout)
    summary = compare_file(runs, "honest", "sloppy")
    assert summary["harnessVsOracle"]["candidate"]["falseVerified"]["count"] == 1
    assert summary["harnessVsOracle"]["baseline"]["agreement"]["count"] == 1
