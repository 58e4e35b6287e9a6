"""`lsp-agent --version` against `lsp-agent --help`, side by side in one run.

--version must cost no more than --help: it prints a constant (lsp_agent/_version.py) where it
used to ask the installed package's metadata (importlib.metadata: email, zipfile, csv, ...), which
made it twice --help. Both are timed with hyperfine in the same invocation (interleaved warm-ups,
the same load), with `python -c pass` as the floor every command pays; the table gives each
median and mean and the ratio --version / --help. `--against CHECKOUT` adds the same two commands
from another checkout (e.g. the code before this change), so a before/after is one run too.

Without hyperfine on PATH the same commands are timed by a loop here, alternating them.

    python bench/version_flag.py                         # 30 runs each
    python bench/version_flag.py --against /tmp/before   # and another checkout's, in the same run
    python bench/version_flag.py --runs 2                # the CI smoke
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def commands(checkouts: dict[str, Path]) -> dict[str, list[str]]:
    """Label -> argv. Each checkout's package is reached through PYTHONPATH, set per command by `env`."""
    named = {"python -c pass": [sys.executable, "-c", "pass"]}
    for label, _root in checkouts.items():
        for flag in ("--help", "--version"):
            named[f"{label}: lsp-agent {flag}"] = [sys.executable, "-m", "lsp_agent", flag]
    return named


def env_for(label: str, checkouts: dict[str, Path]) -> dict[str, str]:
    root = next((path for name, path in checkouts.items() if label.startswith(f"{name}:")), REPO)
    return {**os.environ, "PYTHONPATH": str(root)}


def check_sources(checkouts: dict[str, Path], cwd: Path) -> None:
    """Each label must run its own checkout's package (`python -m` puts the working directory first
    on sys.path: run from the checkout, every label would time that one)."""
    for label, root in checkouts.items():
        found = subprocess.run([sys.executable, "-c", "import lsp_agent; print(lsp_agent.__file__)"], check=True,
                               capture_output=True, text=True, cwd=cwd,
                               env=env_for(f"{label}:", checkouts)).stdout.strip()
        if not Path(found).is_relative_to(root):  # not resolved: a linked checkout is its own
            raise SystemExit(f"{label}: lsp_agent came from {found}, not from {root}")
        print(f"{label}: lsp_agent from {Path(found).parent}", file=sys.stderr)


def with_hyperfine(named: dict[str, list[str]], checkouts: dict[str, Path], runs: int,
                   cwd: Path) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "times.json"
        argv = ["hyperfine", "--style", "none", "--shell", "none", "--warmup", "3", "--runs", str(runs),
                "--export-json", str(out)]
        for label, command in named.items():
            # `env` pins each command's PYTHONPATH: hyperfine runs every command in one environment
            pinned = ["env", f"PYTHONPATH={env_for(label, checkouts)['PYTHONPATH']}", *command]
            argv += ["--command-name", label, " ".join(pinned)]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=cwd)
        results = json.loads(out.read_text())["results"]
    return {r["command"]: [t * 1000 for t in r["times"]] for r in results}


def with_loop(named: dict[str, list[str]], checkouts: dict[str, Path], runs: int,
              cwd: Path) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {label: [] for label in named}
    for _ in range(runs):
        for label, command in named.items():  # alternating, so a drift of the machine favours none
            began = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env_for(label, checkouts), cwd=cwd)
            times[label].append((time.perf_counter() - began) * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs of each command (default 30)")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT", help="another checkout to time beside this one")
    parser.add_argument("--no-hyperfine", action="store_true", help="time with the loop here even if hyperfine exists")
    args = parser.parse_args()
    checkouts = {"this": REPO}
    if args.against is not None:
        if not (args.against / "lsp_agent" / "cli" / "main.py").is_file():
            parser.error(f"{args.against} is no lsp-agent checkout (no lsp_agent/cli/main.py)")
        checkouts["other"] = args.against.absolute()
    for root in checkouts.values():  # as pip install does: no start pays for compiling our modules
        compileall.compile_dir(root / "lsp_agent", quiet=1)
    named = commands(checkouts)
    tool = "hyperfine" if shutil.which("hyperfine") and not args.no_hyperfine else "loop"
    print(f"load average {os.getloadavg()[0]:.1f} before; timed by {tool}, {args.runs} runs each", file=sys.stderr)
    with tempfile.TemporaryDirectory() as cwd:  # outside every checkout: see check_sources
        check_sources(checkouts, Path(cwd))
        times = (with_hyperfine if tool == "hyperfine" else with_loop)(named, checkouts, args.runs, Path(cwd))
    print("| command | median ms | mean ms | min ms |")
    print("|---|---:|---:|---:|")
    for label, values in times.items():
        print(f"| {label} | {statistics.median(values):.1f} | {statistics.mean(values):.1f} | {min(values):.1f} |")
    print()
    print("| checkout | --version / --help (medians) | --version / --help (means) |")
    print("|---|---:|---:|")
    worst = 0.0
    for label in checkouts:
        version, help_ = times[f"{label}: lsp-agent --version"], times[f"{label}: lsp-agent --help"]
        ratio = statistics.median(version) / statistics.median(help_)
        print(f"| {label} | {ratio:.2f} | {statistics.mean(version) / statistics.mean(help_):.2f} |")
        worst = ratio if label == "this" else worst
    # a target, not a test: the ratio says whether --version still costs more than --help
    return 0 if worst <= 1.10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
