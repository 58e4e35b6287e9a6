"""eval's two contract numbers as flags of the real CLI: `eval run --max-event-line-bytes` (an agent
event line longer than it marks the attempt's metrics `partial`) and `eval compare
--p95-min-verified` (verified attempts a cell needs before its P95 is shown). Each at its bound,
one past it, and out-of-range values refused as usage errors."""

from __future__ import annotations

import json
from pathlib import Path

from evalkit import header, manifest, record, task, write_runs
from test_eval_cli import lsp_agent_eval, write_json

LINE = 4096


def test_an_event_line_of_exactly_the_bound_is_counted_and_one_byte_more_is_damage(tmp_path: Path) -> None:
    fix = {"write": {"target.txt": "ok"}}
    data = manifest([task("at_bound", fix | {"stream": f"line_bytes:{LINE}"}),
                     task("one_past", fix | {"stream": f"line_bytes:{LINE + 1}"})])
    path = write_json(tmp_path / "manifest.json", data)

    run = lsp_agent_eval("run", str(path), "--max-event-line-bytes", str(LINE), cwd=tmp_path)

    assert run.returncode == 0, run.stderr
    attempts = [r for r in map(json.loads, run.stdout.splitlines()) if r["type"] == "attempt"]
    status = {(r["task"], r["arm"]): (r["metricsStatus"], r["metricsIssue"]) for r in attempts}
    assert status == {("at_bound", "base"): ("observed", None), ("at_bound", "cand"): ("observed", None),
                      ("one_past", "base"): ("partial", "line_too_long"),
                      ("one_past", "cand"): ("partial", "line_too_long")}
    assert all(r["outcome"] == "verified" for r in attempts)  # damaged metrics never decide success


def test_out_of_range_bounds_are_usage_errors(tmp_path: Path) -> None:
    path = write_json(tmp_path / "manifest.json", manifest([task("t", {})]))
    for value in ("1023", "many"):
        refused = lsp_agent_eval("run", str(path), "--max-event-line-bytes", value, cwd=tmp_path)
        assert refused.returncode == 2 and "--max-event-line-bytes" in refused.stderr
        assert refused.stdout == ""  # nothing ran
    runs = write_runs(tmp_path / "runs.ndjson", [header(["t"], 1), record("t", 1, "base"), record("t", 1, "cand")])
    for value in ("0", "-1"):
        refused = lsp_agent_eval("compare", str(runs), "base", "cand", "--p95-min-verified", value, cwd=tmp_path)
        assert refused.returncode == 2 and "--p95-min-verified must be between 1 and 1,000,000" in refused.stderr


def test_p95_is_shown_from_the_configured_number_of_verified_attempts(tmp_path: Path) -> None:
    lines = [header(["t"], 5)]
    for rep in range(1, 6):
        lines += [record("t", rep, "base", elapsed=rep * 100), record("t", rep, "cand", elapsed=rep * 10)]
    runs = write_runs(tmp_path / "runs.ndjson", lines)

    at_bound = lsp_agent_eval("compare", str(runs), "base", "cand", "--json", "--p95-min-verified", "5", cwd=tmp_path)
    assert at_bound.returncode == 0, at_bound.stderr
    summary = json.loads(at_bound.stdout)
    assert summary["p95MinVerified"] == 5
    base = summary["tasks"][0]["baseline"]
    assert (base["elapsedMsP95VerifiedOnly"], base["p95OmittedReason"]) == (500.0, None)
    assert "at least 5 of them" in summary["definitions"]["elapsedMsP95VerifiedOnly"]

    short = lsp_agent_eval("compare", str(runs), "base", "cand", "--json", "--p95-min-verified", "6", cwd=tmp_path)
    base = json.loads(short.stdout)["tasks"][0]["baseline"]
    assert base["elapsedMsP95VerifiedOnly"] is None
    assert base["p95OmittedReason"] == "5 verified observation(s); P95 needs at least 6"
    table = lsp_agent_eval("compare", str(runs), "base", "cand", "--p95-min-verified", "6", cwd=tmp_path)
    assert "needs 6 verified" in table.stdout and "P95 needs 6 verified attempts" in table.stdout

    default = json.loads(lsp_agent_eval("compare", str(runs), "base", "cand", "--json", cwd=tmp_path).stdout)
    assert default["p95MinVerified"] == 20  # without the flag: the documented 20
