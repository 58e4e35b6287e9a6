"""`lsp-agent --version` against `lsp-agent --help`, side by side in one run.

--version must cost no more than --help: it prints a constant (lsp_agent/_version.py) where it
used to ask the installed package's metadata (importlib.metadata: email, zipfile, csv, ...), which
made it twice --help. Both are timed with hyperfine in the same invocation (interleaved warm-ups,
the same load), with `python -c pass` as the floor every command pays; the table gives each
median and mean and the ratio --version / --help. `--against CHECKOUT` adds the same two commands
from another checkout (e.g. the code before this change), so a before/after is one run too;
`--venv LABEL=DIR` adds the console script of a copy installed from a wheel (what users run: no
checkout on the path).

Without hyperfine on PATH the same commands are timed by a loop here, alternating them.

    python bench/version_flag.py                         # 30 runs each
    python bench/version_flag.py --against /tmp/before   # and another checkout's, in the same run
    python bench/version_flag.py --venv before=/tmp/v_before --venv after=/tmp/v_after   # installed copies
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
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Source:
    """Where one label's lsp-agent comes from: a checkout (its package put first on PYTHONPATH, run
    as `python -m lsp_agent`) or an installed copy (a venv's own `bin/lsp-agent` console script,
    what a user runs: no PYTHONPATH at all)."""

    label: str
    root: Path  # the checkout, or the venv
    installed: bool

    def python(self) -> str:
        return str(self.root / "bin" / "python") if self.installed else sys.executable

    def argv(self, flag: str) -> list[str]:
        return [str(self.root / "bin" / "lsp-agent"), flag] if self.installed else [
            sys.executable, "-m", "lsp_agent", flag]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return env if self.installed else {**env, "PYTHONPATH": str(self.root)}


def commands(sources: list[Source]) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Label -> (argv, environment)."""
    named = {"python -c pass": ([sys.executable, "-c", "pass"], Source("", REPO, False).env())}
    for source in sources:
        for flag in ("--help", "--version"):
            named[f"{source.label}: lsp-agent {flag}"] = (source.argv(flag), source.env())
    return named


def check_sources(sources: list[Source], cwd: Path) -> None:
    """Each label must run its own copy of the package (`python -m` puts the working directory first
    on sys.path: run from a checkout, every label would time that one)."""
    for source in sources:
        found = subprocess.run([source.python(), "-c", "import lsp_agent; print(lsp_agent.__file__)"], check=True,
                               capture_output=True, text=True, cwd=cwd, env=source.env()).stdout.strip()
        if not Path(found).is_relative_to(source.root):  # not resolved: a linked checkout is its own
            raise SystemExit(f"{source.label}: lsp_agent came from {found}, not from {source.root}")
        print(f"{source.label}: lsp_agent from {Path(found).parent}", file=sys.stderr)


def with_hyperfine(named: dict[str, tuple[list[str], dict[str, str]]], runs: int, cwd: Path) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "times.json"
        argv = ["hyperfine", "--style", "none", "--shell", "none", "--warmup", "3", "--runs", str(runs),
                "--export-json", str(out)]
        for label, (command, env) in named.items():
            # `env -i` pins each command's whole environment: hyperfine runs every command in its own
            pinned = ["env", "-i", *(f"{k}={v}" for k, v in env.items() if " " not in k + v), *command]
            argv += ["--command-name", label, " ".join(pinned)]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=cwd)
        results = json.loads(out.read_text())["results"]
    return {r["command"]: [t * 1000 for t in r["times"]] for r in results}


def with_loop(named: dict[str, tuple[list[str], dict[str, str]]], runs: int, cwd: Path) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {label: [] for label in named}
    for _ in range(runs):
        for label, (command, env) in named.items():  # alternating, so a drift of the machine favours none
            began = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env, cwd=cwd)
            times[label].append((time.perf_counter() - began) * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs of each command (default 30)")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT", help="another checkout to time beside this one")
    parser.add_argument("--venv", action="append", default=[], metavar="LABEL=DIR",
                        help="also time the lsp-agent installed in this venv (repeatable)")
    parser.add_argument("--no-hyperfine", action="store_true", help="time with the loop here even if hyperfine exists")
    args = parser.parse_args()
    sources = [Source("this", REPO, False)]
    if args.against is not None:
        if not (args.against / "lsp_agent" / "cli" / "main.py").is_file():
            parser.error(f"{args.against} is no lsp-agent checkout (no lsp_agent/cli/main.py)")
        sources.append(Source("other", args.against.absolute(), False))
    for given in args.venv:
        label, _, where = given.partition("=")
        if not where or not (Path(where) / "bin" / "lsp-agent").is_file():
            parser.error(f"--venv {given!r}: LABEL=DIR, where DIR/bin/lsp-agent exists")
        sources.append(Source(label, Path(where).absolute(), True))
    for source in sources:  # as pip install does: no start pays for compiling our modules
        if not source.installed:
            compileall.compile_dir(source.root / "lsp_agent", quiet=1)
    named = commands(sources)
    tool = "hyperfine" if shutil.which("hyperfine") and not args.no_hyperfine else "loop"
    print(f"load average {os.getloadavg()[0]:.1f} before; timed by {tool}, {args.runs} runs each", file=sys.stderr)
    with tempfile.TemporaryDirectory() as cwd:  # outside every checkout: see check_sources
        check_sources(sources, Path(cwd))
        times = (with_hyperfine if tool == "hyperfine" else with_loop)(named, args.runs, Path(cwd))
    print("| command | median ms | mean ms | min ms |")
    print("|---|---:|---:|---:|")
    for label, values in times.items():
        print(f"| {label} | {statistics.median(values):.1f} | {statistics.mean(values):.1f} | {min(values):.1f} |")
    print()
    print("| copy | --version / --help (medians) | --version / --help (means) |")
    print("|---|---:|---:|")
    worst = 0.0
    for source in sources:
        version, help_ = times[f"{source.label}: lsp-agent --version"], times[f"{source.label}: lsp-agent --help"]
        ratio = statistics.median(version) / statistics.median(help_)
        print(f"| {source.label} | {ratio:.2f} | {statistics.mean(version) / statistics.mean(help_):.2f} |")
        worst = ratio if source.label == "this" else worst
    # a target, not a test: the ratio says whether --version still costs more than --help
    return 0 if worst <= 1.10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
