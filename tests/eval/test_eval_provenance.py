"""Where a record came from, why an attempt failed, and an oracle that crashes instead of deciding."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from evalkit import HERE, PY, attempts, header, manifest, record, run_cohort, task, write_runs

import lsp_agent
from lsp_agent.eval.compare import compare_file
from lsp_agent.eval.provenance import checkout_commit
from lsp_agent.eval.report_html import render_html
from lsp_agent.eval.report_text import render_table
from lsp_agent.eval.runner import crash_of

COPYING = str(HERE / "copying_oracle.py")
CHECKOUT = Path(lsp_agent.__file__).resolve().parent.parent


def copying_task(task_id: str, plan: dict[str, Any], mode: str) -> dict[str, Any]:
    return {"id": task_id, "prompt": json.dumps(plan), "files": [{"path": "target.txt", "content": "todo"}],
            "oracle": [PY, COPYING, mode]}


@pytest.fixture(scope="module")
def cohort() -> tuple[dict[str, dict[str, Any]], str]:
    tasks = [task("fixed", {"write": {"target.txt": "ok"}}),
             task("unfixed", {}),
             task("agent_error", {"error": "cannot reach http://127.0.0.1:9/v1\n\x1b[2J(after 1 attempt(s))"}),
             copying_task("fifo", {"write": {"target.txt": "ok"}, "fifo": ["pipe"]}, "exit"),
             copying_task("assert_fails", {}, "assert"),
             copying_task("assert_passes", {"write": {"target.txt": "ok"}}, "assert")]
    arms = [{"name": "base", "temperature": 0.2, "seed": 7, "maxOutputTokens": 512}, {"name": "cand"}]
    lines, err, result = run_cohort(manifest(tasks, arms=arms), jobs=2)
    assert result.exit_code == 0, err
    return {f"{r['task']}/{r['arm']}": r for r in attempts(lines)}, err


def test_every_record_says_when_where_and_by_which_build_it_ran(
        cohort: tuple[dict[str, dict[str, Any]], str]) -> None:
    records, _ = cohort
    git = subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True, text=True,
                         check=False)
    for r in records.values():
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["startedAt"])
        assert r["executor"] == "local" and r["host"] == socket.gethostname()
        assert r["agentVersion"] == lsp_agent.__version__
        assert r["agentCommit"] == (git.stdout.strip() if git.returncode == 0 else None)
    assert records["fixed/base"]["sampling"] == {"temperature": 0.2, "seed": 7, "maxOutputTokens": 512}
    assert records["fixed/cand"]["sampling"] == {"temperature": None, "seed": None, "maxOutputTokens": None}


def test_commit_is_read_from_head_a_ref_or_packed_refs_without_running_git(tmp_path: Path) -> None:
    sha = "a" * 40
    git = tmp_path / "repo" / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    assert checkout_commit(tmp_path / "repo") is None  # an unborn branch
    (git / "packed-refs").write_text(f"# pack-refs with: peeled\n{sha} refs/heads/main\n")
    assert checkout_commit(tmp_path / "repo") == sha
    (git / "refs" / "heads" / "main").write_text("b" * 40 + "\n")
    assert checkout_commit(tmp_path / "repo") == "b" * 40
    (git / "HEAD").write_text("ref: refs/heads/../../../../etc/passwd\n")
    assert checkout_commit(tmp_path / "repo") is None
    (git / "HEAD").write_text("ref: refs/heads/loop\n")
    (git / "refs" / "heads" / "loop").write_text("ref: refs/heads/loop\n")
    assert checkout_commit(tmp_path / "repo") is None
    # A worktree: `.git` is a file naming its own git dir, refs live in the common dir.
    worktree = tmp_path / "wt"
    own = git / "worktrees" / "wt"
    own.mkdir(parents=True)
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {own}\n")
    (own / "HEAD").write_text("ref: refs/heads/main\n")
    (own / "commondir").write_text("../..\n")
    assert checkout_commit(worktree) == "b" * 40
    assert checkout_commit(tmp_path / "nothing") is None


def test_each_attempt_that_did_not_verify_says_why_on_stderr(cohort: tuple[dict[str, dict[str, Any]], str]) -> None:
    records, err = cohort
    assert records["agent_error/base"]["outcome"] == "failed"
    lines = err.splitlines()

    def line_of(task_id: str, arm: str) -> str:
        found = [line for line in lines if f"task {task_id} rep 1 arm {arm}:" in line]
        assert len(found) == 1, err
        return found[0]

    # The agent's own error, on the same line, its newline and terminal escape made harmless.
    assert "the agent exited 1 with an error: cannot reach http://127.0.0.1:9/v1 ?[2J(after" in line_of(
        "agent_error", "cand")
    assert "\x1b" not in err
    assert "the agent exited 0 (stop reason final); the oracle exited 1: the task is not done" in line_of(
        "unfixed", "base")
    assert " · " not in line_of("fixed", "base").split(": verified in ")[1].split(" · ETA")[0]


def test_an_oracle_that_crashes_could_not_decide_and_a_failing_assert_still_fails(
        cohort: tuple[dict[str, dict[str, Any]], str]) -> None:
    records, err = cohort
    # The agent left a FIFO in the fixture; copying the fixture raises: not the agent's failure.
    assert records["fifo/base"]["outcome"] == "completed_unverified"
    assert "could not decide: it crashed (shutil.Error" in err
    assert records["assert_fails/base"]["outcome"] == "failed"  # AssertionError: a verdict
    assert records["assert_passes/base"]["outcome"] == "verified"


@pytest.mark.parametrize(("output", "crash"), [
    ("Traceback (most recent call last):\n  File \"o.py\", line 3, in <module>\n    f()\n"
     "OSError: [Errno 6] No such device or address\n", "OSError: [Errno 6] No such device or address"),
    ("Traceback (most recent call last):\n  File \"o.py\", line 1\nshutil.Error: [('a', 'b', 'pipe')]\n",
     "shutil.Error: [('a', 'b', 'pipe')]"),
    ("Traceback (most recent call last):\n  File \"o.py\", line 1\nAssertionError: 1 != 2\n", None),
    ("Traceback (most recent call last):\n  File \"o.py\", line 1\nAssertionError\n", None),
    # A test runner reporting a test that raised, then its own summary: a verdict, not a crash.
    ("ERROR: test_x\nTraceback (most recent call last):\n  File \"t.py\", line 1\nImportError: no\n\n"
     "----\nRan 1 test\n\nFAILED (errors=1)\n", None),
    ("tests failed\n", None),
    ("", None),
])
def test_crash_is_told_from_a_verdict_by_the_end_of_the_output(output: str, crash: str | None) -> None:
    assert crash_of(output) == crash


def _records(arm_fields: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [header(["t"], 2)]
    for rep in (1, 2):
        for arm in ("base", "cand"):
            fields = {"startedAt": "2026-01-01T00:00:00Z", "executor": "local", "host": "h",
                      "agentVersion": "0.1.0", "agentCommit": "c" * 40,
                      "sampling": {"temperature": None, "seed": None, "maxOutputTokens": None}}
            lines.append({**record("t", rep, arm), **fields, **arm_fields.get(f"{arm}{rep}", {})})
    return lines


def test_compare_warns_first_when_the_records_mix_builds_executors_or_sampling(tmp_path: Path) -> None:
    clean = compare_file(write_runs(tmp_path / "clean.ndjson", _records({})), "base", "cand")
    assert clean["warnings"] == []
    assert clean["provenance"]["agentVersions"] == ["0.1.0"] and clean["provenance"]["hosts"] == ["h"]
    mixed = compare_file(write_runs(tmp_path / "mixed.ndjson", _records({
        "cand2": {"agentVersion": "0.2.0", "agentCommit": None, "executor": "ray"},
        "base2": {"sampling": {"temperature": 0.5, "seed": None, "maxOutputTokens": None}}})), "base", "cand")
    warned = mixed["warnings"]
    assert [w.split(":")[1].strip() for w in warned] == [
        "these records mix lsp-agent versions", "these records mix lsp-agent commits",
        "these records mix executors", "arm base mixes sampling settings"]
    assert "0.1.0, 0.2.0" in warned[0] and "none" in warned[1] and "server defaults | temperature=0.5" in warned[3]
    text = render_table(mixed)
    assert text.splitlines()[:4] == warned  # at the very top
    html = render_html(mixed)
    assert html.index("these records mix lsp-agent versions") < html.index("<h1>")
    old = compare_file(write_runs(tmp_path / "old.ndjson", [header(["t"], 1), record("t", 1, "base"),
                                                            record("t", 1, "cand")]), "base", "cand")
    assert old["warnings"] == [] and old["provenance"]["agentVersions"] == ["unknown"]


def test_the_starter_oracle_cannot_decide_on_a_fixture_holding_a_named_pipe(tmp_path: Path) -> None:
    suite = HERE.parent.parent / "examples" / "eval"
    fixture = tmp_path / "fixture"
    subprocess.run(["cp", "-r", str(suite / "tasks" / "py-mean"), str(fixture)], check=True)
    os.mkfifo(fixture / "pipe")
    done = subprocess.run([PY, str(suite / "oracles" / "check.py"), "py-mean", str(fixture)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2 and "named pipe" in done.stderr


def test_on_a_terminal_a_failed_attempt_says_why_above_the_bar() -> None:
    import io

    from lsp_agent.eval.progress import Progress
    from lsp_agent.eval.records import AttemptRecord

    err = io.StringIO()
    progress = Progress(err, ["base", "cand"], live=True)
    progress.begin(2)
    failed = AttemptRecord.model_validate_json(json.dumps(record("t", 1, "base", outcome="failed")))
    progress.attempt(failed, None, "the agent exited 1 with an error: no key")
    progress.attempt(AttemptRecord.model_validate_json(json.dumps(record("t", 1, "cand"))), None, None)
    lines = [line.rsplit("\r\x1b[K", 1)[-1] for line in err.getvalue().split("\n")]
    assert "eval: task t rep 1 arm base: failed · the agent exited 1 with an error: no key" in lines
    assert sum("arm cand" in line for line in lines) == 0  # a verified attempt only moves the bar
