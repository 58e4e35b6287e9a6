"""A check the sandbox cannot start is an `error` of the run's set-up, never `failed`.

`failed` says the agent's change broke the project. When bubblewrap itself cannot run the configured
program (a relative path with `..` that resolves elsewhere inside the sandbox, a program under a
directory the sandbox hides), it exits 1 with one `bwrap:` line; that used to be read as the check's
own exit code 1. Driven through the real CLI on the scripted model, with real bubblewrap.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.sandbox.probe import probe

pytestmark = pytest.mark.skipif(not probe().available, reason="needs a working bubblewrap")

VERIFY_THEN_STOP = [{"text": "checking", "tool_calls": [{"name": "verify_project", "arguments": {}}]},
                    {"text": "done"}]
#: a check that passes when it runs: the classification alone decides the verdict
PROGRAM = "#!/bin/sh\necho the check ran\nexit 0\n"


@pytest.fixture
def under_tmp() -> Iterator[Path]:
    # The sandbox gives every command a private /tmp: a program the host finds there is missing inside.
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="lsp-agent-checks-") as name:
        yield Path(name)


def workspace(root: Path, argv: list[str]) -> Path:
    ws = root / "ws"
    (ws / ".lsp-agent").mkdir(parents=True)
    (ws / "a.py").write_text("x = 1\n", encoding="utf-8")
    config = f'[[tools.verify]]\nkind = "test"\nparser = "generic"\nargv = {json.dumps(argv)}\n'
    (ws / ".lsp-agent" / "config.toml").write_text(config, encoding="utf-8")
    return ws


def program(path: Path, text: str = PROGRAM) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


def run(ws: Path, script_dir: Path) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    script = script_dir / "script.json"
    script.write_text(json.dumps({"label": "verify", "replies": VERIFY_THEN_STOP}), encoding="utf-8")
    # cwd "/": the CLI started from anywhere but the workspace, as an editor or CI starts it.
    proc = subprocess.run([sys.executable, "-m", "lsp_agent", "run", "verify the project", "--workspace", str(ws),
                           "--model", "scripted/t", "--script", str(script), "--json"],
                          capture_output=True, text=True, timeout=180, cwd="/",
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    return proc, [json.loads(line) for line in proc.stdout.splitlines()]


def verify_result(events: list[dict[str, Any]]) -> dict[str, Any]:
    use = next(e for e in events if e["type"] == "tool_use" and e["part"]["tool"] == "verify_project")
    state: dict[str, Any] = use["part"]["state"]
    return state


def test_a_program_given_with_dotdot_that_the_sandbox_cannot_find_is_an_error(under_tmp: Path) -> None:
    program(under_tmp / "tools" / "check")
    ws = workspace(under_tmp, ["../tools/check"])

    proc, events = run(ws, under_tmp)

    assert proc.returncode == 0, proc.stderr
    state = verify_result(events)
    envelope = state["metadata"]["envelope"]
    assert envelope["status"] == "error", envelope
    check = envelope["checks"][0]
    assert (check["exitCode"], check["executed"]) == (None, False)
    assert envelope["error"].startswith("could not start test command check: the sandbox could not run it: execvp "
                                        "../tools/check: No such file or directory")
    assert state["output"].startswith("ERROR: verify error — could not start test command check")
    assert "test (check): could not start (the sandbox could not run it" in state["output"]
    finish = events[-1]
    assert finish["type"] == "run_finish" and finish["verification"] == "not_run"


def test_a_program_in_a_directory_the_sandbox_hides_is_an_error(tmp_path: Path, isolated_state: Path) -> None:
    # The harness's state directory is covered inside the sandbox (its records are not the command's).
    program(isolated_state / "tools" / "check")
    ws = workspace(tmp_path, [str(isolated_state / "tools" / "check")])

    proc, events = run(ws, tmp_path)

    assert proc.returncode == 0, proc.stderr
    envelope = verify_result(events)["metadata"]["envelope"]
    assert envelope["status"] == "error" and "the sandbox could not run it: execvp" in envelope["error"]
    assert events[-1]["verification"] == "not_run"


@pytest.mark.parametrize("output", [
    "bwrap: execvp ./check: No such file or directory\nbut the check went on\n",  # more than bwrap's one line
    "a check's own failure\n",
], ids=["bwrap-like-line-and-more", "plain"])
def test_a_check_that_ran_and_exited_1_still_failed(tmp_path: Path, output: str) -> None:
    script = f"#!/bin/sh\ncat <<'END'\n{output}END\nexit 1\n"
    program(tmp_path / "ws" / "check", script)
    ws = workspace(tmp_path, ["./check"])

    proc, events = run(ws, tmp_path)

    assert proc.returncode == 0, proc.stderr
    envelope = verify_result(events)["metadata"]["envelope"]
    assert envelope["status"] == "failed" and envelope["checks"][0]["exitCode"] == 1
    assert events[-1]["verification"] == "failed"


def test_a_check_that_runs_passes(under_tmp: Path) -> None:
    # The same program, reachable inside the sandbox: the classification changes nothing that ran.
    program(under_tmp / "ws" / "tools" / "check")
    ws = workspace(under_tmp, ["./tools/check"])

    proc, events = run(ws, under_tmp)

    assert proc.returncode == 0, proc.stderr
    assert verify_result(events)["metadata"]["envelope"]["status"] == "passed"
    assert events[-1]["verification"] == "verified"


def test_a_command_the_sandbox_cannot_start_says_so_not_exit_1(tmp_path: Path, isolated_state: Path) -> None:
    # An allow-listed program found on PATH in a directory the sandbox hides (the state directory):
    # bubblewrap exits 1 with its own line; the model must not read that as the program's failure.
    program(isolated_state / "bin" / "mycheck")
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "lsp-agent" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[tools]\nallowed_programs = ["mycheck"]\n', encoding="utf-8")
    ws = tmp_path / "ws"
    ws.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"label": "cmd", "replies": [
        {"text": "running", "tool_calls": [{"name": "run_command", "arguments": {"command": "mycheck"}}]},
        {"text": "done"}]}), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "PATH": f"{isolated_state / 'bin'}{os.pathsep}{os.environ['PATH']}"}

    proc = subprocess.run([sys.executable, "-m", "lsp_agent", "run", "run it", "--workspace", str(ws),
                           "--model", "scripted/t", "--script", str(script), "--json"],
                          capture_output=True, text=True, timeout=180, cwd="/", env=env)

    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    use = next(e for e in events if e["type"] == "tool_use" and e["part"]["tool"] == "run_command")
    state = use["part"]["state"]
    assert state["output"].startswith("ERROR: could not start mycheck: the sandbox could not run it: execvp "
                                      "mycheck: No such file or directory"), state["output"]
    assert "exit=1" not in state["output"] and state["metadata"]["exit_code"] is None
