"""Command overhead of the OS sandbox: the same command run through run_process with and without
bubblewrap (workspace-write, no network), median of N runs each, in a fresh git workspace.

    python bench/sandbox_overhead.py [--runs N]

Prints a small table: wall time, and the CPU time (user + system) of the started processes,
which a loaded machine inflates much less than wall time. The result is recorded in
docs/benchmarks.md (target: < 30 ms added per command).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsp_agent.sandbox import Sandbox, probe
from lsp_agent.settings.config import SENSITIVE_PATHS
from lsp_agent.tools.process import run_process

COMMANDS: list[list[str]] = [["true"], ["cat", "a.txt"], [sys.executable, "-c", "pass"], ["git", "status", "--short"]]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _time(argv: list[str], root: Path, sandbox: Sandbox | None, runs: int) -> tuple[float, float]:
    """(median wall ms, median CPU ms of the processes started) over `runs` runs."""
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(runs):
        cpu = _children_cpu()
        started = time.perf_counter()
        outcome = await run_process(argv, root, 60, sandbox=sandbox)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((_children_cpu() - cpu) * 1000)
        assert outcome.exit_code == 0, outcome.output
    return statistics.median(walls), statistics.median(cpus)


async def main(runs: int) -> int:
    found = probe()
    if not found.available:
        print(f"bubblewrap cannot run here: {found.reason}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "a.txt").write_text("hello\n")
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        # As configured by default: .lsp-agent/ made (empty, read-only) around each command, the
        # sensitive paths looked at before and after it.
        sandbox = Sandbox(root.resolve(), "workspace-write", sensitive=SENSITIVE_PATHS)
        print(f"median of {runs} runs; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print("| command | wall, no sandbox (ms) | wall, bwrap (ms) | wall added (ms) | CPU added (ms) |")
        print("|---|---:|---:|---:|---:|")
        for argv in COMMANDS:
            shown = " ".join("python" if a == sys.executable else a for a in argv)
            await _time(argv, root, sandbox, 2)  # warm caches (and the probe)
            plain, plain_cpu = await _time(argv, root, None, runs)
            boxed, boxed_cpu = await _time(argv, root, sandbox, runs)
            print(f"| `{shown}` | {plain:.1f} | {boxed:.1f} | {boxed - plain:+.1f} | {boxed_cpu - plain_cpu:+.1f} |")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    sys.exit(asyncio.run(main(parser.parse_args().runs)))
