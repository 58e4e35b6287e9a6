"""verify_project on real temp projects: real git repos, real pytest/mypy processes, the real tool."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from lsp_agent.core.tools import FileTracker, ToolContext, ToolResult
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.edits import ApplyFailure, ApplyResult, EditPlan
from lsp_agent.domain.events import VerificationStatus
from lsp_agent.domain.history import ErrorKind, Message, Role, ToolResultPart
from lsp_agent.domain.verification import derive
from lsp_agent.settings.config import Limits, Settings, ToolSettings, VerifyCommand
from lsp_agent.tools.fingerprint import source_fingerprint
from lsp_agent.tools.verify_detect import detect_commands
from lsp_agent.tools.verify_project import VerifyProject, VerifyProjectArgs
from tests.helpers import LOCK_HOLDER, wait_lock_released

GIT = ["git", "-c", "user.name=verify test", "-c", "user.email=verify@localhost", "-c", "commit.gpgsign=false"]


class LocalApplier:
    """An applier whose flush succeeds or fails as told; records that it was asked."""

    def __init__(self, flush_error: str | None = None) -> None:
        self.flush_error = flush_error
        self.flushed: list[list[str]] = []

    async def apply(self, plan: EditPlan) -> ApplyResult:
        return ApplyResult(ok=True)

    async def flush(self, paths: list[str]) -> ApplyResult:
        self.flushed.append(paths)
        if self.flush_error:
            return ApplyResult(ok=False, failure=ApplyFailure.IO_ERROR, message=self.flush_error)
        return ApplyResult(ok=True)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def git_repo(root: Path, files: dict[str, str]) -> str:
    write(root, files)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "fixture"], cwd=root, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True,
                          text=True).stdout.strip()


def git_status(root: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=root, check=True, capture_output=True,
                          text=True).stdout


def context(root: Path, verify: list[VerifyCommand] | None = None, applier: LocalApplier | None = None,
            **limits: float) -> ToolContext:
    settings = Settings(limits=Limits(**limits), tools=ToolSettings(verify=verify))
    return ToolContext(root=root, settings=settings, documents=DiskDocuments(root),
                       applier=applier or LocalApplier(), files=FileTracker())


async def verify(ctx: ToolContext) -> ToolResult:
    return await VerifyProject().run(VerifyProjectArgs(), ctx)


def assert_stable_text(result: ToolResult, root: Path) -> None:
    assert str(root) not in result.output
    assert str(root.resolve()) not in result.output
    assert " in 0." not in result.output and "durationMs" not in result.output


# The test projects' own pytest config: this machine's heavy plugins (hypothesis, pytest-lsp) would
# cost seconds per run, and `-q` here checks that verify's -q does not drop the closing line (-qq).
PYTEST_INI = {"pytest.ini": "[pytest]\naddopts = -q -p no:hypothesispytest -p no:pytest-lsp -p no:benchmark\n"}
CALC = "def add(a: int, b: int) -> int:\n    return a + b\n"
PASSING_TESTS = ("from pkg.calc import add\n\n\ndef test_add() -> None:\n    assert add(1, 2) == 3\n\n\n"
                 "def test_zero() -> None:\n    assert add(0, 0) == 0\n")


async def test_passing_pytest_project_passes_with_revision_and_leaves_the_tree_clean(tmp_path: Path) -> None:
    head = git_repo(tmp_path, {**PYTEST_INI, "pkg/__init__.py": "", "pkg/calc.py": CALC,
                                "tests/test_calc.py": PASSING_TESTS})
    applier = LocalApplier()
    result = await verify(context(tmp_path, applier=applier))
    envelope = result.metadata["envelope"]
    assert result.ok, result.output
    assert result.output.splitlines()[0] == "OK: verify passed — 2 passed, 0 failed (test: pytest)"
    assert applier.flushed == [[]]  # everything the agent edited was flushed first
    assert (envelope["status"], envelope["revision"], envelope["clean"]) == ("passed", head, True)
    check = envelope["checks"][0]
    assert check["kind"] == "test" and check["executed"] is True and check["exitCode"] == 0
    assert check["counts"] == {"passed": 2, "failed": 0, "errors": 0, "skipped": 0}
    assert check["timedOut"] is False and check["outputTruncated"] is False and check["signal"] is None
    assert "test_add" not in result.output  # passes are not listed
    assert git_status(tmp_path) == ""  # no .pytest_cache or __pycache__ left behind
    assert_stable_text(result, tmp_path)


async def test_failing_pytest_reports_file_line_and_scrubs_temp_paths(tmp_path: Path) -> None:
    write(tmp_path, {
        **PYTEST_INI,
        "pkg/__init__.py": "",
        "pkg/calc.py": "def div(a: int, b: int) -> float:\n    if b == 0:\n        raise ZeroDivisionError('b is 0')\n"
                       "    return a / b\n",
        "tests/test_calc.py": "import os\n\nfrom pkg.calc import div\n\n\ndef test_div() -> None:\n"
                              "    assert div(1, 0) == 0\n\n\ndef test_value() -> None:\n"
                              "    assert div(4, 2) == 3\n\n\n"
                              "def test_path() -> None:\n    open(os.path.abspath('missing.txt'))\n",
    })
    result = await verify(context(tmp_path))
    envelope = result.metadata["envelope"]
    assert not result.ok and result.error_kind is ErrorKind.TOOL_FAILURE
    assert result.output.startswith("ERROR: verify failed — 0 passed, 3 failed; 1 of 1 check failed (test: pytest)")
    assert envelope["status"] == "failed" and envelope["revision"] is None and envelope["clean"] is None
    failures = {(f["file"], f["line"]) for f in envelope["checks"][0]["failures"]}
    # raised in the package: the package's line; a wrong assertion: the test's line
    assert failures == {("pkg/calc.py", 3), ("tests/test_calc.py", 11), ("tests/test_calc.py", 15)}
    assert "pkg/calc.py:3: tests/test_calc.py::test_div: ZeroDivisionError: b is 0" in result.output
    assert "test (pytest): exit=1 — 3 failed" in result.output
    assert "missing.txt" in result.output
    assert_stable_text(result, tmp_path)


async def test_mypy_error_parsed_and_configured_commands_win_over_detection(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/__init__.py": "def name() -> int:\n    return 'x'\n",
                     "tests/test_never_run.py": "def test_boom() -> None:\n    raise SystemExit(1)\n"})
    mypy = VerifyCommand(kind="typecheck", argv=[sys.executable, "-m", "mypy", "pkg"], parser="mypy")
    result = await verify(context(tmp_path, verify=[mypy]))
    envelope = result.metadata["envelope"]
    assert [c["kind"] for c in envelope["checks"]] == ["typecheck"]  # detected pytest is not run
    check = envelope["checks"][0]
    assert check["command"] == [sys.executable, "-m", "mypy", "pkg"]
    assert check["failures"] == [{"file": "pkg/__init__.py", "line": 2,
                                  "message": 'Incompatible return value type (got "str", expected "int") '
                                             "[return-value]"}]
    assert check["executed"] is True and check["counts"]["failed"] == 1
    assert result.output.splitlines()[0] == (
        "ERROR: verify failed — 1 typecheck error; 1 of 1 check failed (typecheck: mypy)")
    assert "pkg/__init__.py:2: Incompatible return value type" in result.output
    assert_stable_text(result, tmp_path)


async def test_all_skipped_passes_but_executed_nothing_and_is_not_evidence(tmp_path: Path) -> None:
    write(tmp_path, {**PYTEST_INI, "tests/test_later.py": "import pytest\n\n\n@pytest.mark.skip(reason='later')\n"
                                            "def test_later() -> None:\n    pass\n"})
    result = await verify(context(tmp_path))
    envelope = result.metadata["envelope"]
    assert envelope["status"] == "passed" and result.ok
    assert envelope["checks"][0]["executed"] is False
    assert envelope["checks"][0]["counts"]["skipped"] == 1
    assert "no test or type check actually executed" in result.output
    assert "nothing executed" in result.output
    # The harness (and so skill evidence) does not count a run where nothing executed.
    part = ToolResultPart(call_id="c1", name="verify_project", ok=True, output=result.output,
                          metadata=result.metadata)
    assert derive([Message(role=Role.TOOL, parts=[part])]).status is VerificationStatus.NOT_RUN


async def test_timeout_is_an_error_and_kills_the_process_group(tmp_path: Path) -> None:
    # The child holds a lock for a minute unless killed; its release proves the group kill (the
    # child's pid may be a sandbox's own, in a PID namespace). The timeout leaves two interpreters
    # time to start on a loaded machine.
    script = ("import pathlib, subprocess, sys, time\n"
              f"subprocess.Popen([sys.executable, '-c', {LOCK_HOLDER!r}])\n"
              "[time.sleep(0.01) for _ in iter(lambda: pathlib.Path('locked').exists(), True)]\n"
              "time.sleep(30)\n")
    slow = VerifyCommand(kind="test", argv=[sys.executable, "-c", script])
    started = time.monotonic()
    result = await verify(context(tmp_path, verify=[slow], verify_timeout_s=4))
    assert time.monotonic() - started < 25
    envelope = result.metadata["envelope"]
    check = envelope["checks"][0]
    assert envelope["status"] == "error" and result.error_kind is ErrorKind.TIMEOUT
    assert check["timedOut"] is True and check["exitCode"] is None and check["executed"] is False
    assert "timed out after 4 s; its process group was killed" in envelope["error"]
    assert result.output.startswith("ERROR: verify error — test command python -c timed out after 4 s")
    await wait_lock_released(tmp_path / "child.lock")


async def test_flush_failure_is_an_error_and_runs_nothing(tmp_path: Path) -> None:
    marker = VerifyCommand(kind="test", argv=[sys.executable, "-c", "open('marker', 'w').write('ran')"])
    applier = LocalApplier(flush_error="the editor could not save pkg/a.py")
    result = await verify(context(tmp_path, verify=[marker], applier=applier))
    envelope = result.metadata["envelope"]
    assert envelope["status"] == "error" and envelope["checks"] == []
    assert envelope["error"] == "unsaved edits: the editor could not save pkg/a.py"
    assert result.output.startswith("ERROR: verify not run — unsaved edits")
    assert not (tmp_path / "marker").exists()


async def test_a_program_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    missing = VerifyCommand(kind="lint", argv=["no-such-linter-for-lsp-agent"])
    result = await verify(context(tmp_path, verify=[missing]))
    envelope = result.metadata["envelope"]
    assert envelope["status"] == "error"
    assert envelope["error"].startswith("could not start lint command no-such-linter-for-lsp-agent")
    assert envelope["checks"][0]["executed"] is False
    assert "lint (no-such-linter-for-lsp-agent): could not start" in result.output


async def test_generic_commands_judged_by_exit_code_and_failures_show_output(tmp_path: Path) -> None:
    write(tmp_path, {"check.py": "import sys\nprint('result is 5, expected 4')\nsys.exit(3)\n",
                     "ok.py": "print('fine')\n"})
    ok = VerifyCommand(kind="test", argv=[sys.executable, "ok.py"])
    bad = VerifyCommand(kind="test", argv=[sys.executable, "check.py"])
    passed = await verify(context(tmp_path, verify=[ok]))
    assert passed.ok and passed.output == "OK: verify passed — all 1 check exited 0 (test: python ok.py)\n" \
        "test (python ok.py): exit=0"
    assert passed.metadata["envelope"]["checks"][0]["executed"] is True
    failed = await verify(context(tmp_path, verify=[ok, bad]))
    assert failed.metadata["envelope"]["status"] == "failed"
    assert "test (python check.py): exit=3\n  output:\n    result is 5, expected 4" in failed.output


async def test_nothing_to_run_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, {"README.md": "no code\n"})
    result = await verify(context(tmp_path))
    assert result.metadata["envelope"]["status"] == "error"
    assert result.metadata["envelope"]["checks"] == []
    assert "no verification commands" in result.output


async def test_fingerprint_is_stable_and_follows_untracked_files(tmp_path: Path) -> None:
    head = git_repo(tmp_path, {"a.py": "x = 1\n"})
    first = await source_fingerprint(tmp_path)
    assert first[:2] == (head, True)
    assert await source_fingerprint(tmp_path) == first
    write(tmp_path, {"new.py": "y = 1\n"})
    untracked = await source_fingerprint(tmp_path)
    assert untracked[1] is False and untracked[2] != first[2]
    write(tmp_path, {"new.py": "y = 2\n"})
    changed = await source_fingerprint(tmp_path)
    assert changed[2] not in (first[2], untracked[2])
    (tmp_path / "new.py").unlink()
    assert await source_fingerprint(tmp_path) == first
    write(tmp_path, {"a.py": "x = 2\n"})
    assert (await source_fingerprint(tmp_path))[2] != first[2]


async def test_fingerprint_ignores_git_ignored_files(tmp_path: Path) -> None:
    git_repo(tmp_path, {".gitignore": "build/\n*.log\n", "a.py": "x = 1\n"})
    first = await source_fingerprint(tmp_path)
    write(tmp_path, {"build/out.txt": "artefact\n", "run.log": "noise\n"})
    assert await source_fingerprint(tmp_path) == first
    write(tmp_path, {"run.log": "more noise\n"})
    assert await source_fingerprint(tmp_path) == first


async def test_fingerprint_outside_git_walks_the_tree(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "x = 1\n"})
    revision, clean, digest = await source_fingerprint(tmp_path)
    assert (revision, clean) == (None, None)
    write(tmp_path, {"node_modules/x/index.js": "1\n", ".venv/lib.py": "1\n", "pkg/__pycache__/a.pyc": "1\n"})
    assert (await source_fingerprint(tmp_path))[2] == digest
    write(tmp_path, {"pkg/b.py": "y = 1\n"})
    assert (await source_fingerprint(tmp_path))[2] != digest


def test_detection_finds_the_projects_checks(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": "[tool.mypy]\nstrict = true\n\n[tool.ruff]\nline-length = 100\n",
        "tests/test_x.py": "def test_x() -> None:\n    pass\n",
        "package.json": '{"scripts": {"test": "node --test"}}',
        "tsconfig.json": "{}",  # no node_modules/.bin/tsc: not run
    })
    commands = detect_commands(tmp_path)
    assert [(c.kind, c.parser) for c in commands] == [
        ("test", "pytest"), ("test", "generic"), ("typecheck", "mypy"), ("lint", "ruff")]
    assert commands[0].argv[:3] == [sys.executable, "-m", "pytest"] and "no:cacheprovider" in commands[0].argv
    assert commands[1].argv == ["npm", "test"]
    assert commands[2].argv[-1] == "."  # no files/packages configured: check the project
    assert "--no-fix" in commands[3].argv and "concise" in commands[3].argv


def test_detection_skips_placeholders_and_non_python_tests(tmp_path: Path) -> None:
    write(tmp_path, {
        "package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}',
        "tests/app.spec.js": "test()\n",
        "setup.cfg": "[mypy]\nfiles = src\n",
    })
    commands = detect_commands(tmp_path)
    assert [(c.kind, c.parser) for c in commands] == [("typecheck", "mypy")]
    assert commands[0].argv[-1] == "--error-summary"  # mypy's own `files` setting decides


def test_arguments_are_strict_and_empty() -> None:
    schema = VerifyProjectArgs.model_json_schema()
    assert schema.get("properties", {}) == {}
    with pytest.raises(ValidationError):
        VerifyProjectArgs.model_validate({"command": "rm -rf /"})
    assert VerifyProject().access.value == "exec"
    assert list(VerifyProject().paths(VerifyProjectArgs())) == []


async def test_result_text_lists_at_most_30_failures_and_is_bounded(tmp_path: Path) -> None:
    script = ("for i in range(1, 501):\n    print(f'pkg/m.py:{i}:1: F401 `os{i}` imported but unused')\n"
              "print('Found 500 errors.')\nraise SystemExit(1)\n")
    lint = VerifyCommand(kind="lint", argv=[sys.executable, "-c", script], parser="ruff")
    result = await verify(context(tmp_path, verify=[lint]))
    check = result.metadata["envelope"]["checks"][0]
    assert check["counts"]["failed"] == 500 and len(check["failures"]) == 200
    assert "pkg/m.py:30: F401" in result.output and "pkg/m.py:31:" not in result.output
    assert "... 470 more failures not shown" in result.output
    small = await verify(context(tmp_path, verify=[lint], result_chars=1000))
    assert len(small.output) <= 1000
    assert small.output.startswith("ERROR: verify failed — 500 lint errors")
    assert "[TRUNCATED]" in small.output
