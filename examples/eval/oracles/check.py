"""Oracle of the starter suite: `check.py TASK FIXTURE` exits 0 (done), 1 (not done) or 2 (cannot decide,
e.g. the fixture cannot be copied).

The fixture is copied to a temp dir and the task's trusted tests (oracles/hidden/TASK, never shown
to the agent) are laid over the copies in it, so editing a test or the tsconfig does not help.
Python tasks: `python -m unittest` under several hash seeds (a bug that depends on set order is
not "flaky"). TypeScript tasks: `tsc -p .` (strict) must pass, then `node --test` on test/.
TypeScript needs `tsc` and `node` on PATH (npm install -g typescript); without them: exit 2.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEEDS = ("0", "1", "2", "3", "4")
TIMEOUT_S = 120


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> int:
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        print(f"oracle: {argv[0]} timed out (a hang counts as not done)", file=sys.stderr)
        return 1
    return done.returncode


def python_tests(work: Path) -> int:
    for seed in SEEDS:
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONDONTWRITEBYTECODE": "1"}
        code = run([sys.executable, "-m", "unittest", "discover", "-q", "-s", "tests", "-t", "."], work, env)
        if code != 0:
            print(f"oracle: unittest exited {code} with PYTHONHASHSEED={seed}", file=sys.stderr)
            return 1
    return 0


def typescript_tests(work: Path) -> int:
    tsc, node = shutil.which("tsc"), shutil.which("node")
    if tsc is None or node is None:
        print("oracle: TypeScript tasks need `tsc` and `node` on PATH", file=sys.stderr)
        return 2
    if run([tsc, "-p", "."], work) != 0:
        return 1
    tests = sorted(str(p) for p in (work / "test").glob("*.test.js"))
    return 0 if tests and run([node, "--test", *tests], work) == 0 else 1


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: check.py TASK FIXTURE", file=sys.stderr)
        return 2
    task, fixture = sys.argv[1], Path(sys.argv[2])
    trusted = HERE / "hidden" / task
    if not trusted.is_dir() or not fixture.is_dir():
        print(f"oracle: no trusted tests for {task!r} or no fixture at {fixture}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="lsp-agent-oracle-") as tmp:
        work = Path(tmp) / "work"
        try:
            shutil.copytree(fixture, work, symlinks=True,
                            ignore=shutil.ignore_patterns(".git", "node_modules", "out", "__pycache__"))
            shutil.copytree(trusted, work, dirs_exist_ok=True)
        except (OSError, shutil.Error) as exc:  # e.g. a named pipe the agent left: no verdict either way
            print(f"oracle: cannot copy the fixture: {exc}", file=sys.stderr)
            return 2
        return typescript_tests(work) if (trusted / "tsconfig.json").exists() else python_tests(work)


if __name__ == "__main__":
    sys.exit(main())
