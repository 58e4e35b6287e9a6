"""`eval run` at scale: a scripted cohort on this machine (--jobs N) vs on a two-node local Ray cluster.

The agent is the eval tests' fake agent (it writes the fix and prints a normal event stream), so
the numbers are the harness's own cost per attempt: Git fixture, the oracle before and after, the
process tree, the records, and for Ray the scheduling, the shipped manifest directory and the
result's trip back. The Ray cluster is a head and one worker node on loopback (the worker cannot
see the submitting machine's files), each with jobs/2 CPUs, started and stopped here.

    python bench/eval_executors.py                 # 10 tasks x 10 repetitions x 2 arms = 200 attempts, --jobs 4
    python bench/eval_executors.py --tasks 2 --repetitions 2
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests" / "eval"
sys.path.insert(0, str(TESTS))

from raycluster import Cluster  # noqa: E402

PY = sys.executable


def build(where: Path, tasks: int, repetitions: int) -> Path:
    where.mkdir(parents=True)
    for script in ("fake_agent.py", "oracle.py"):
        shutil.copy(TESTS / script, where / script)
    plan = {"write": {"target.txt": "ok"}}
    data = {"model": "fake/model", "runtimeRevision": "bench", "repetitions": repetitions, "timeoutMs": 120_000,
            "command": [PY, "{manifestDir}/fake_agent.py"], "arms": [{"name": "base"}, {"name": "cand"}],
            "tasks": [{"id": f"t{n}", "prompt": json.dumps(plan), "files": [{"path": "target.txt", "content": "x"}],
                       "oracle": [PY, "oracle.py", "target.txt", "ok"]} for n in range(tasks)]}
    path = where / "manifest.json"
    path.write_text(json.dumps(data))
    return path


def run(manifest: Path, args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    started = time.monotonic()
    done = subprocess.run([PY, "-m", "lsp_agent", "eval", "run", str(manifest), *args], capture_output=True,
                          text=True, env=env, check=False, cwd=manifest.parent)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"eval run failed ({done.returncode}): {done.stderr[-2000:]}")
    records = [json.loads(line) for line in done.stdout.splitlines()]
    attempts = [r for r in records if r["type"] == "attempt"]
    assert all(r["outcome"] == "verified" for r in attempts), "every attempt should be verified"
    return {"wall": wall, "attempts": len(attempts), "elapsed": [r["elapsedMs"] for r in attempts]}


def row(name: str, jobs: int, result: dict[str, Any]) -> str:
    n = result["attempts"]
    slot = result["wall"] * jobs / n * 1000  # ms of one of the `jobs` slots each attempt used
    elapsed = statistics.mean(result["elapsed"])
    return (f"| {name} | {n} | {jobs} | {result['wall']:.1f} s | {n / result['wall']:.2f} | {elapsed:.0f} ms | "
            f"{slot:.0f} ms | {slot - elapsed:.0f} ms |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="lsp-ray-bench-"))
    cluster = Cluster(base / "c")
    (base / "c").mkdir()
    try:
        manifest = build(base / "submitter", args.tasks, args.repetitions)
        local = run(manifest, ["--jobs", str(args.jobs)])
        started = time.monotonic()
        cluster.start_head(cpus=max(1, args.jobs // 2))
        cluster.add_worker(hidden=(manifest.parent,), cpus=max(1, args.jobs - args.jobs // 2))
        cluster.wait_for_nodes(2)
        up = time.monotonic() - started
        remote = run(manifest, ["--executor", "ray", "--jobs", str(args.jobs)], env=cluster.env)
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(f"cluster start (head + worker, until both are alive): {up:.1f} s\n")
    print("| executor | attempts | jobs | wall | attempts/s | mean elapsedMs (agent+oracle) | slot time per attempt "
          "| overhead per attempt |")
    print("|---|---|---|---|---|---|---|---|")
    print(row("local", args.jobs, local))
    print(row("ray, 2 nodes", args.jobs, remote))


if __name__ == "__main__":
    main()
