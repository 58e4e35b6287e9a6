"""Cost of one program the harness runs for itself (git for list_dir, the fingerprint and write
detection, rg for search_code): run as before (unsandboxed, allow-listed environment, git's
overrides) and as now (`tools.internal.run_internal`: the same inside a read-only bubblewrap
sandbox, after the check for control files that would block it), median of N runs each, in a
fresh git workspace of a few hundred files. Also the cost of reading the repository's git
configuration once (the override cache's miss) against a cache hit.

    python bench/internal_programs.py [--runs N]

Prints a small table: wall time, and the CPU time (user + system) of the started processes. The
result is recorded in docs/benchmarks.md.
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
from collections.abc import Awaitable, Callable
from pathlib import Path

from lsp_agent.sandbox import git as sandbox_git
from lsp_agent.sandbox import probe
from lsp_agent.tools.internal import run_internal
from lsp_agent.tools.process import run_process, scrubbed_env

CALLS: list[tuple[str, list[str], bytes | None]] = [
    ("list_dir: git ls-files --ignored", ["git", "ls-files", "-z", "--others", "--ignored", "--exclude-standard",
                                          "--directory", "--", "."], None),
    ("fingerprint: git status", ["git", "status", "--porcelain", "-z", "--untracked-files=all",
                                 "--ignore-submodules=dirty"], None),
    ("write detection: git check-ignore", ["git", "check-ignore", "--stdin", "-z"], b"a.py\0build/x.o\0"),
    ("search_code: rg", ["rg", "--json", "--no-config", "--hidden", "-e", "needle", "--", "."], None),
]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _time(run: Callable[[], Awaitable[object]], runs: int) -> tuple[float, float]:
    """(median wall ms, median CPU ms of the processes started) over `runs` runs."""
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(runs):
        cpu = _children_cpu()
        started = time.perf_counter()
        await run()
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((_children_cpu() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def _workspace(root: Path) -> None:
    for n in range(300):
        (root / f"pkg{n % 10}").mkdir(exist_ok=True)
        (root / f"pkg{n % 10}" / f"m{n}.py").write_text(f"needle = {n}\n")
    (root / ".gitignore").write_text("build/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@localhost", "commit", "-qm", "x"], cwd=root,
                   check=True)


async def main(runs: int) -> int:
    found = probe()
    if not found.available:
        print(f"bubblewrap cannot run here: {found.reason}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        _workspace(root)
        print(f"median of {runs} runs; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print("| call | wall, before (ms) | wall, now (ms) | wall added (ms) | CPU added (ms) |")
        print("|---|---:|---:|---:|---:|")
        for label, argv, stdin in CALLS:
            def before(argv: list[str] = argv, stdin: bytes | None = stdin) -> Awaitable[object]:
                return run_process(argv, root, 60, env=scrubbed_env(), stdin=stdin)

            def now(argv: list[str] = argv, stdin: bytes | None = stdin) -> Awaitable[object]:
                return run_internal(argv, root, 60, stdin=stdin)

            await _time(before, 2)  # warm caches (and the probe)
            await _time(now, 2)
            plain, plain_cpu = await _time(before, runs)
            boxed, boxed_cpu = await _time(now, runs)
            print(f"| {label} | {plain:.1f} | {boxed:.1f} | {boxed - plain:+.1f} | {boxed_cpu - plain_cpu:+.1f} |")

        def miss() -> None:
            sandbox_git._CACHE.clear()
            sandbox_git.git_env(root)

        async def threaded(call: Callable[[], object]) -> object:
            return await asyncio.to_thread(call)

        hit, _ = await _time(lambda: threaded(lambda: sandbox_git.git_env(root)), runs)
        listed, listed_cpu = await _time(lambda: threaded(miss), runs)
        print(f"| git configuration read (override cache miss) | — | {listed:.1f} | | {listed_cpu:+.1f} |")
        print(f"| override cache hit (a few stats) | — | {hit:.2f} | | |")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    sys.exit(asyncio.run(main(parser.parse_args().runs)))
