"""Checkpoints: what one costs a step, and a restore, beside a shadow git repository.

For each workspace size (default 10,000 and 100,000 files, about 200 bytes each, 100 per
directory) it measures, as medians of --repeat runs:

- walk: the stat snapshot the write detection takes before every command anyway (not a checkpoint
  cost; shown because the checkpoint reuses it);
- checkpoint (command): the checkpoint added to a command step where one file changed, given that
  walk (targets: <= 30 ms at 10k, <= 100 ms at 100k);
- checkpoint (edit): the checkpoint of an edit tool's declared path (no walk);
- restore 100: rewinding a step that rewrote 100 files, journal and fsyncs included (target <= 1 s);
  with --confirm the whole tree is walked too (outside changes the chain has not seen go as well);
- baseline: the first checkpoint of a workspace (every file read once; not per step);
- git add+commit: `git add -A && git commit` into a shadow repository (its own GIT_DIR, index and an
  empty config) after one file changed — the alternative design — and `git checkout` of the 100 files.

`python bench/checkpoints.py [--files 10000,100000] [--repeat 5]`. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_agent.checkpoints.rewind import rewind
from lsp_agent.checkpoints.workspace import WorkspaceCheckpoints
from lsp_agent.core.checkpoint_port import StepRef
from lsp_agent.core.write_detect import snapshot
from lsp_agent.settings.config import Checkpoints

TARGETS_MS = {10_000: 30.0, 100_000: 100.0}
RESTORE_TARGET_MS = 1000.0


def make_tree(root: Path, files: int) -> None:
    for n in range(files):
        directory = root / f"d{n // 100:04}"
        if n % 100 == 0:
            directory.mkdir(parents=True)
        (directory / f"f{n:06}.py").write_text(f"# file {n}\n" + "x = 1\n" * 30)


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def shadow_git(root: Path, shadow: Path) -> Callable[..., None]:
    env = {**os.environ, "GIT_DIR": str(shadow), "GIT_WORK_TREE": str(root), "GIT_INDEX_FILE": str(shadow / "index"),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "b",
           "GIT_AUTHOR_EMAIL": "b@localhost", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@localhost"}

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args],
                       env=env, check=True, capture_output=True)
    git("init", "-q", str(shadow))
    return git


async def measure(files: int, repeat: int, work: Path) -> dict[str, float]:
    root = work / f"ws{files}"
    make_tree(root, files)
    ws = WorkspaceCheckpoints(root, work / f"state{files}", Checkpoints)
    out: dict[str, list[float]] = {k: [] for k in ("walk", "command", "edit", "restore", "restore_confirm",
                                                   "baseline", "git_baseline", "git_commit", "git_checkout")}
    start = time.perf_counter()
    await ws.before(StepRef("s", "m0", 0, "run_command"), None, snapshot(root))
    out["baseline"].append(ms(start))
    one = root / "d0000" / "f000000.py"
    for n in range(repeat):
        one.write_text(f"changed {n}\n")
        start = time.perf_counter()
        walk = snapshot(root)
        out["walk"].append(ms(start))
        start = time.perf_counter()
        await ws.before(StepRef("s", f"m{n + 1}", n + 1, "run_command"), None, walk)
        out["command"].append(ms(start))
        one.write_text(f"edited {n}\n")
        start = time.perf_counter()
        await ws.before(StepRef("s", f"e{n + 1}", n + 1, "apply_patch"), ["d0000/f000000.py"], None)
        out["edit"].append(ms(start))
    hundred = [root / f"d{n // 100:04}" / f"f{n:06}.py" for n in range(0, min(files, 100 * 97), 97)][:100]
    for n in range(repeat * 2):
        ref = StepRef("s", f"r{n}", 100 + n, "run_command")
        before = await ws.record(ref, None, snapshot(root), "before")
        for path in hundred:
            path.write_text(f"rewritten by step {n}\n")
        await ws.after(ref, None, snapshot(root))
        start = time.perf_counter()
        outcome = await rewind(ws, "s", before.id, [], dry_run=False, confirm=n % 2 == 1)
        out["restore_confirm" if n % 2 else "restore"].append(ms(start))
        assert len(outcome.restored) == len(hundred), outcome.restored
    shadow = work / f"shadow{files}"
    git = shadow_git(root, shadow)
    start = time.perf_counter()
    git("add", "-A")
    git("commit", "-q", "-m", "baseline")
    out["git_baseline"].append(ms(start))
    for n in range(repeat):
        one.write_text(f"git {n}\n")
        start = time.perf_counter()
        git("add", "-A")
        git("commit", "-q", "-m", f"step {n}")
        out["git_commit"].append(ms(start))
        for path in hundred:
            path.write_text(f"git rewritten {n}\n")
        start = time.perf_counter()
        git("checkout", "-q", "HEAD", "--", *[str(p.relative_to(root)) for p in hundred])
        out["git_checkout"].append(ms(start))
    shutil.rmtree(root)
    return {k: statistics.median(v) for k, v in out.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", default="10000,100000", help="workspace sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    missed = False
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for files in (int(f) for f in args.files.split(",")):
            rows.append((files, asyncio.run(measure(files, args.repeat, Path(tmp)))))
    print("| files | walk (paid by write detection) | checkpoint: command | checkpoint: edit | restore 100 files "
          "| restore 100, --confirm | baseline (once) | shadow git baseline (once) | shadow git add -A && commit "
          "| ratio git/checkpoint | shadow git checkout 100 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for files, r in rows:
        print(f"| {files:,} | {r['walk']:.1f} ms | {r['command']:.1f} ms | {r['edit']:.2f} ms | {r['restore']:.0f} ms "
              f"| {r['restore_confirm']:.0f} ms "
              f"| {r['baseline'] / 1000:.1f} s | {r['git_baseline'] / 1000:.1f} s "
              f"| {r['git_commit']:.0f} ms | {r['git_commit'] / r['command']:.0f}x "
              f"| {r['git_checkout']:.0f} ms |")
        target = TARGETS_MS.get(files)
        if target is not None and r["command"] > target:
            print(f"MISSED: checkpoint {r['command']:.1f} ms > {target} ms at {files:,} files")
            missed = True
        if r["restore"] > RESTORE_TARGET_MS:
            print(f"MISSED: restore {r['restore']:.0f} ms > {RESTORE_TARGET_MS:.0f} ms at {files:,} files")
            missed = True
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
