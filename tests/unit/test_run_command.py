from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from lsp_agent.core.tools import FileTracker, ToolContext, ToolResult
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.edits import ApplyResult, EditPlan
from lsp_agent.domain.history import ErrorKind
from lsp_agent.settings.config import Settings
from lsp_agent.tools.run_command import RunCommand, RunCommandArgs
from tests.helpers import LOCK_HOLDER, wait_for, wait_lock_released


class NoApplier:
    async def apply(self, plan: EditPlan) -> ApplyResult:
        return ApplyResult(ok=False, message="read-only test context")

    async def flush(self, paths: list[str]) -> ApplyResult:
        return ApplyResult(ok=True)


def make_ctx(root: Path, settings: Settings | None = None) -> ToolContext:
    return ToolContext(root=root, settings=settings or Settings(), documents=DiskDocuments(root),
                       applier=NoApplier(), files=FileTracker())


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return make_ctx(tmp_path)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    return tmp_path


async def run(ctx: ToolContext, command: str, timeout_s: float | None = None) -> ToolResult:
    return await RunCommand().run(RunCommandArgs(command=command, timeout_s=timeout_s), ctx)


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (an orphan may wait to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


# A parent that starts a grandchild holding a lock on child.lock (for a minute, if it survives), then says
# "started" once the grandchild holds it; the lock's release proves the grandchild is dead.
SPAWNER = (
    "import pathlib, subprocess, sys, time; "
    f"child = subprocess.Popen([sys.executable, '-c', {LOCK_HOLDER!r}]); "
    "[time.sleep(0.01) for _ in iter(lambda: pathlib.Path('locked').exists(), True)]; "
    "print('started', flush=True); pathlib.Path('spawned').write_text('1'); time.sleep(60)"
)


async def test_allowed_command_output_and_exit_code_first(ctx: ToolContext) -> None:
    result = await run(ctx, "python -c \"print('hello')\"")
    assert result.ok
    assert result.output == "OK: exit=0 python -c 'print('\"'\"'hello'\"'\"')'\nhello"
    assert result.metadata == {"exit_code": 0, "timed_out": False}


async def test_nonzero_exit_is_an_error_with_the_code_first(ctx: ToolContext) -> None:
    result = await run(ctx, "python -c \"import sys; print('bad'); sys.exit(3)\"")
    assert not result.ok and result.error_kind is ErrorKind.TOOL_FAILURE
    assert result.output.startswith("ERROR: exit=3 python -c ")
    assert result.output.endswith("\nbad")
    assert result.metadata["exit_code"] == 3


async def test_shell_metacharacters_are_literal_arguments(ctx: ToolContext) -> None:
    command = """python -c "import sys; print(sys.argv[1:])" "; rm -rf /" '$(whoami)' '`id`' '|' '&&' '>out'"""
    result = await run(ctx, command)
    assert result.ok
    assert result.output.splitlines()[1] == "['; rm -rf /', '$(whoami)', '`id`', '|', '&&', '>out']"
    assert not (ctx.root / "out").exists()


@pytest.mark.parametrize("command", [
    "rm -rf build",
    "bash -c 'echo hi'",
    "sh -c ls",
    "/usr/bin/python3 -c 'print(1)'",
    "./python -c 'print(1)'",
    "python;ls",
    "$(which python) -c 1",
    "env python -c 1",
])
async def test_programs_outside_the_allow_list_are_denied(ctx: ToolContext, command: str) -> None:
    result = await run(ctx, command)
    assert result.error_kind is ErrorKind.DENIED
    assert result.output.startswith("ERROR: refused:")


@pytest.mark.parametrize("command", [
    "git push", "git commit -m x", "git -c a=b commit", "git -C . status", "git --no-pager log",
    "git config user.name x", "git checkout .", "git reset --hard", "git", "git diff --output=patch.txt",
])
async def test_git_is_limited_to_read_only_subcommands(repo: Path, command: str) -> None:
    result = await run(make_ctx(repo), command)
    assert result.error_kind is ErrorKind.DENIED, result.output
    assert not (repo / "patch.txt").exists()


async def test_commit_and_push_stay_refused_even_if_configured(tmp_path: Path) -> None:
    settings = Settings.model_validate({"tools": {"git_read_only": ["status", "commit", "push"]}})
    ctx = make_ctx(tmp_path, settings)
    for command in ("git commit -m x", "git push origin main"):
        result = await run(ctx, command)
        assert result.error_kind is ErrorKind.DENIED
        assert "left to the user" in result.output


async def test_read_only_git_runs(repo: Path) -> None:
    (repo / "new.txt").write_text("x")
    result = await run(make_ctx(repo), "git status --porcelain")
    assert result.output == "OK: exit=0 git status --porcelain\n?? new.txt"


async def test_timeout_kills_the_whole_process_group(ctx: ToolContext) -> None:
    # A timeout long enough for two interpreters to start on a loaded machine before it strikes.
    started = time.monotonic()
    result = await run(ctx, "python -c " + shlex.quote(SPAWNER), timeout_s=5.0)
    assert time.monotonic() - started < 30
    assert result.error_kind is ErrorKind.TIMEOUT
    assert result.output.startswith("ERROR: timeout after 5s (process group killed): python -c ")
    assert "started" in result.output  # the partial output is kept
    assert result.metadata == {"exit_code": None, "timed_out": True}
    # The grandchild's pid is the sandbox's own (its PID namespace): its lock, dropped, proves the kill.
    await wait_lock_released(ctx.root / "child.lock")


async def test_cancelling_the_call_kills_the_process_group(ctx: ToolContext) -> None:
    task = asyncio.create_task(run(ctx, "python -c " + shlex.quote(SPAWNER), timeout_s=60))
    await wait_for(lambda: (ctx.root / "spawned").exists())  # the grandchild holds its lock
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_lock_released(ctx.root / "child.lock")


async def test_timeout_bounds(ctx: ToolContext) -> None:
    at_max = await run(ctx, "python -c 1", timeout_s=300)
    over = await run(ctx, "python -c 1", timeout_s=300.5)
    assert at_max.ok
    assert over.error_kind is ErrorKind.PARAMETER_MISMATCH
    assert not over.output.startswith("ERROR: exit=")


async def test_long_output_keeps_head_and_tail(ctx: ToolContext) -> None:
    result = await run(ctx, "python -c \"print('a' * 5000 + 'MIDDLE' + 'b' * 5000)\"")
    lines = result.output.splitlines()
    assert lines[0].startswith("OK: exit=0")
    assert lines[1].startswith("[TRUNCATED] the output was longer than 8000 characters")
    assert lines[2] == "a" * 4000
    assert "characters omitted" in lines[3]
    assert lines[4] == "b" * 3999  # the last 4000 characters include the final newline
    assert "MIDDLE" not in "\n".join(lines[1:])


async def test_output_at_the_limit_is_not_cut(tmp_path: Path) -> None:
    settings = Settings.model_validate({"limits": {"output_chars": 1000}})
    # print adds a newline: 999 characters + '\n' is exactly the limit.
    result = await run(make_ctx(tmp_path, settings), "python -c \"print('x' * 999)\"")
    assert "[TRUNCATED]" not in result.output and result.output.endswith("x" * 999)


async def test_the_environment_is_built_from_an_allow_list(ctx: ToolContext,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_API_KEY", "sk-test-123")
    monkeypatch.setenv("PLAIN_SETTING", "not on the list either")
    monkeypatch.setenv("LANG", "C.UTF-8")
    result = await run(ctx, "python -c \"import os;print(os.environ.get('MY_API_KEY'), "
                            "os.environ.get('PLAIN_SETTING'), os.environ.get('LANG'), os.environ['TMPDIR'])\"")
    assert result.output.splitlines()[1] == "None None C.UTF-8 /tmp"


async def test_workspace_root_is_shown_as_dot(ctx: ToolContext) -> None:
    result = await run(ctx, "python -c \"import os; print(os.path.join(os.getcwd(), 'src'))\"")
    assert result.output.splitlines()[1] == "./src"


@pytest.mark.parametrize("command", ["python -c 'unbalanced", "   ", "python -c '\x00'"])
async def test_malformed_commands_are_parameter_mismatches(ctx: ToolContext, command: str) -> None:
    result = await run(ctx, command)
    assert result.error_kind is ErrorKind.PARAMETER_MISMATCH


def test_commands_touch_no_paths() -> None:
    assert list(RunCommand().paths(RunCommandArgs(command="cat ../../etc/passwd"))) == []


def test_timeout_must_be_a_positive_number() -> None:
    RunCommandArgs.model_validate({"command": "ls", "timeout_s": 5})
    for bad in (0, -1, "5", True):
        with pytest.raises(ValueError):
            RunCommandArgs.model_validate({"command": "ls", "timeout_s": bad})
