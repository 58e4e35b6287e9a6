"""`lsp-agent eval run|compare` as processes: the real CLI as the agent, Ctrl-C, exit codes."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from evalkit import ORACLE, PY, manifest, pids_in, task

from lsp_agent.eval.proctree import is_alive

EVAL = [PY, "-m", "lsp_agent", "eval"]


def lsp_agent_eval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EVAL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def script(*creates: tuple[str, str]) -> dict[str, Any]:
    """Step 1 creates the files (one write_file call each); step 2 says it is done. Usage is fixed."""
    calls = [{"name": "write_file", "arguments": {"path": p, "content": c}} for p, c in creates]
    return {"label": "eval", "replies": [
        {"tool_calls": calls, "usage": {"input": 100, "output": 10}},
        {"text": "done", "usage": {"input": 150, "output": 5}},
    ]}


def scripted_cohort(tmp_path: Path) -> Path:
    a = write_json(tmp_path / "a.json", script(("answer_one.txt", "1"), ("answer_two.txt", "2")))
    b = write_json(tmp_path / "b.json", script(("answer_one.txt", "1")))  # never solves task two
    tasks = [{"id": f"task_{name}", "prompt": f"Write {value} into answer_{name}.txt.",
              "files": [{"path": "README.md", "content": f"task {name}\n"}],
              "oracle": [PY, ORACLE, f"answer_{name}.txt", value]} for name, value in (("one", "1"), ("two", "2"))]
    data = {"model": "scripted/eval", "runtimeRevision": "test", "repetitions": 2, "timeoutMs": 60_000,
            "arms": [{"name": "baseline", "config": {"script": str(a)}},
                     {"name": "candidate", "toolProfile": "minimal", "features": {"tail_reminders": True},
                      "config": {"script": str(b)}}],
            "tasks": tasks}  # no `command`: the default is this package's own `run`
    return write_json(tmp_path / "manifest.json", data)


def test_real_cli_two_arm_cohort_comes_out_exactly_as_constructed(tmp_path: Path) -> None:
    run = lsp_agent_eval("run", str(scripted_cohort(tmp_path)), "--jobs", "4", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    runs = tmp_path / "runs.ndjson"
    runs.write_text(run.stdout)
    records = [json.loads(line) for line in run.stdout.splitlines()]
    attempts = [r for r in records if r["type"] == "attempt"]
    assert len(attempts) == 8 and all(r["model"] == "scripted/eval" for r in attempts)
    assert all(r["stopReason"] == "final" and r["metricsStatus"] == "observed" for r in attempts)
    outcomes = {(r["task"], r["arm"], r["repetition"]): r["outcome"] for r in attempts}
    assert outcomes == {(t, arm, rep): "failed" if (t, arm) == ("task_two", "candidate") else "verified"
                        for t in ("task_one", "task_two") for arm in ("baseline", "candidate") for rep in (1, 2)}

    done = lsp_agent_eval("compare", str(runs), "baseline", "candidate", "--json", "--html",
                          str(tmp_path / "report.html"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    overall = summary["overall"]
    assert (overall["baseline"]["verified"], overall["baseline"]["attempts"]) == (4, 4)
    assert (overall["candidate"]["verified"], overall["candidate"]["attempts"]) == (2, 4)
    assert overall["candidate"]["successRate"] == 0.5 and overall["candidate"]["outcomes"]["failed"] == 2
    one, two = summary["tasks"]
    assert (one["task"], one["candidate"]["successRate"], two["candidate"]["successRate"]) == ("task_one", 1.0, 0.0)
    # pairs: both of task one are verified on both sides; none of task two
    assert (one["paired"]["pairs"], one["paired"]["bothVerified"]) == (2, 2)
    assert (two["paired"]["pairs"], two["paired"]["bothVerified"], two["paired"]["elapsedRatioMedian"]) == (2, 0, None)
    elapsed = {(r["task"], r["arm"], r["repetition"]): r["elapsedMs"] for r in attempts}
    expected = sorted(elapsed[("task_one", "candidate", rep)] / elapsed[("task_one", "baseline", rep)]
                      for rep in (1, 2))
    assert sorted(one["paired"]["ratios"]) == expected
    assert overall["paired"]["elapsedRatioMedian"] == sum(expected) / 2
    # metrics exactly as scripted: 2 steps, 250 in, 15 out; baseline makes 2 tool calls, candidate 1
    base_m, cand_m = overall["baseline"]["metrics"], overall["candidate"]["metrics"]
    assert base_m["inputTokens"] == {"median": 250.0, "observed": 4, "missing": 0}
    assert (base_m["outputTokens"]["median"], base_m["steps"]["median"]) == (15.0, 2.0)
    assert (base_m["toolCalls"]["median"], cand_m["toolCalls"]["median"], cand_m["toolErrors"]["median"]) == \
        (2.0, 1.0, 0.0)
    page = (tmp_path / "report.html").read_text()
    assert "task_one" in page and "<svg" in page

    table = lsp_agent_eval("compare", str(runs), "baseline", "candidate", cwd=tmp_path)
    assert table.returncode == 0 and "50.0% (2/4)" in table.stdout


def _reader(stream: Any, into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


def _next_line(lines: queue.Queue[str], seconds: float = 30) -> dict[str, Any]:
    return dict(json.loads(lines.get(timeout=seconds)))


def test_ctrl_c_cancels_kills_the_tree_and_marks_the_cohort_incomplete(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids.json"
    quick = task("quick", {"write": {"target.txt": "ok"}})
    hang = task("hang", {"grandchildren": str(pidfile), "hang": True, "stream": "start_only"})
    path = write_json(tmp_path / "m.json", manifest([quick, hang], timeout_ms=120_000))
    proc = subprocess.Popen([*EVAL, "run", str(path)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    try:
        assert _next_line(lines)["type"] == "cohort"
        # each attempt's line arrives while the runner is still going: written when it ends
        first, second = _next_line(lines), _next_line(lines)
        assert [(r["task"], r["outcome"]) for r in (first, second)] == [("quick", "verified")] * 2
        assert proc.poll() is None
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = pids_in(pidfile)
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=30) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    cancelled, marker = _next_line(lines, 5), _next_line(lines, 5)
    assert (cancelled["task"], cancelled["outcome"], cancelled["verificationMs"]) == ("hang", "cancelled", None)
    assert cancelled["metricsStatus"] == "partial" and cancelled["metrics"] is None
    assert (marker["type"], marker["reason"], marker["recorded"], marker["planned"]) == \
        ("incomplete", "cancelled", 3, 4)
    deadline = time.monotonic() + 30
    while any(is_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in pids if is_alive(p)] == []
    assert proc.stderr is not None and "INCOMPLETE" in proc.stderr.read()


def test_bad_manifest_exits_2_naming_the_field(tmp_path: Path) -> None:
    data = manifest([task("t", {})], repetitions=51)
    done = lsp_agent_eval("run", str(write_json(tmp_path / "m.json", data)), cwd=tmp_path)
    assert done.returncode == 2 and "repetitions:" in done.stderr and done.stdout == ""


def test_ray_executor_without_ray_says_so(tmp_path: Path) -> None:
    path = write_json(tmp_path / "m.json", manifest([task("t", {})]))
    hidden = tmp_path / "no-ray"
    (hidden / "ray").mkdir(parents=True)  # shadows an installed ray: `import ray` fails as if it were absent
    (hidden / "ray" / "__init__.py").write_text("raise ImportError('no ray here')\n")
    done = subprocess.run([*EVAL, "run", str(path), "--executor", "ray"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False, env={**os.environ, "PYTHONPATH": str(hidden)})
    assert done.returncode == 2 and "optional `ray` package" in done.stderr and done.stdout == ""
    assert "lsp-agent[ray]" in done.stderr


def test_compare_rejection_exits_1_with_reasons(tmp_path: Path) -> None:
    runs = tmp_path / "runs.ndjson"
    runs.write_text(json.dumps({"type": "incomplete", "cohort": "c" * 64, "reason": "cancelled", "recorded": 0,
                                "planned": 2}) + "\n")
    done = lsp_agent_eval("compare", str(runs), "a", "b", cwd=tmp_path)
    assert done.returncode == 1 and "cannot compare" in done.stderr and "incomplete" in done.stderr


def test_compare_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    done = lsp_agent_eval("compare", str(tmp_path / "nope.ndjson"), "a", "b", cwd=tmp_path)
    assert done.returncode == 2
