"""The controller refuses a bad call on its own, before any tool body runs.

The real tools check their arguments a second time, so a controller that skipped a check would still
look right through them. These tests register tools that check nothing and write down every call that
reaches them: whatever one of them records got past the controller. Each refusal must also carry the
controller's classification, since that is what tells the model its next step.

Command lines too: a tool declares the ones a call would start (`Tool.commands`) and the controller
applies the session's command policy (the allow-list and per-program rules of tools/argv_rules.py,
supplied by the front end) to each. `run_command` applies the same rules again before it starts a
process; the last tests here pin that second line on its own.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from lsp_agent.core.tool_registry import ToolRegistry
from lsp_agent.core.tools import Access, RelPath, StrictArgs, Tool, ToolContext, ToolResult, WriteText
from lsp_agent.domain.history import ToolResultPart
from lsp_agent.settings.config import load_settings
from lsp_agent.tools import run_command as run_command_module
from lsp_agent.tools.run_command import RunCommand, RunCommandArgs
from tests.helpers import call, make_env, reply

#: the size limit these tests run under (bytes of UTF-8)
LIMIT = 100


class ReadArgs(StrictArgs):
    path: RelPath
    count: int = 0


class WriteArgs(StrictArgs):
    path: RelPath
    content: WriteText


class Recorder(Tool[Any]):
    """A tool with no checks of its own: it only notes that it ran, and with what."""

    summary = "records its call"
    use_when = "testing"
    avoid_when = "never"

    def __init__(self, ran: list[tuple[str, dict[str, Any]]]) -> None:
        self.ran = ran

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        self.ran.append((self.name, args.model_dump()))
        return ToolResult.success("recorded")


class CommandArgs(StrictArgs):
    command: str


class FakeCommand(Recorder):
    """Declares the command line it would start, and starts nothing: it checks no rule itself."""

    name = "fake_command"
    access = Access.EXEC
    args_model = CommandArgs

    def commands(self, args: CommandArgs) -> list[list[str]]:
        return [shlex.split(args.command)]


class FakeRead(Recorder):
    name = "fake_read"
    access = Access.READ
    args_model = ReadArgs


class FakeWrite(Recorder):
    name = "fake_write"
    access = Access.WRITE
    args_model = WriteArgs


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / ".git").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("secret\n", encoding="utf-8")
    os.symlink(outside, root / "escape")  # a directory link out of the workspace
    os.symlink(tmp_path / "outside.txt", root / "leak.txt")  # a file link out of it
    return root


async def run_fakes(root: Path, *calls: Any, **overrides: Any) -> tuple[list[tuple[str, dict[str, Any]]],
                                                                         list[ToolResultPart]]:
    """One step offering only the recording tools; what they recorded and the step's results."""
    ran: list[tuple[str, dict[str, Any]]] = []
    env = make_env(root, [reply(*calls), reply(text="done")], limits={"write_bytes": LIMIT})
    # Only the fakes are offered: no real tool can refuse in the controller's place.
    env = replace(env, registry=ToolRegistry([FakeRead(ran), FakeWrite(ran), FakeCommand(ran)]), tool_view=None,
                  **overrides)
    session = AgentSession(env)
    await Generation(session, 3).run("go")
    results = [r for m in session.history for r in m.tool_results()]
    assert len(results) == len(calls)
    return ran, results


# (name, the call, the classification, words the controller's message must hold)
REFUSED: list[tuple[str, Any, str, str]] = [
    ("dotdot-out", call("fake_read", path="../outside.txt"), "path_denied", "outside the workspace root"),
    ("dotdot-through-a-subdir", call("fake_read", path="sub/../../outside.txt"), "path_denied",
     "outside the workspace root"),
    ("absolute", call("fake_read", path="/etc/passwd"), "path_denied", "absolute paths are not allowed"),
    ("dir-symlink-out", call("fake_read", path="escape/secret.txt"), "path_denied", "outside the workspace root"),
    ("file-symlink-out", call("fake_read", path="leak.txt"), "path_denied", "outside the workspace root"),
    ("write-through-symlink-out", call("fake_write", path="escape/new.txt", content="x"), "path_denied",
     "outside the workspace root"),
    ("write-into-git", call("fake_write", path=".git/hooks/pre-commit", content="x"), "path_denied",
     "never writes"),
    ("nul-in-path", call("fake_read", path="a\x00.txt"), "path_denied", "NUL"),
    ("content-over-limit", call("fake_write", path="big.txt", content="x" * (LIMIT + 1)), "parameter_mismatch",
     f"the limit is {LIMIT}"),
    # 51 characters, 102 bytes: the limit counts encoded bytes, not characters.
    ("content-over-limit-in-bytes", call("fake_write", path="big.txt", content="é" * 51), "parameter_mismatch",
     f"the limit is {LIMIT}"),
    ("nul-in-content", call("fake_write", path="nul.txt", content="a\x00b"), "parameter_mismatch", "NUL"),
    ("unknown-field", call("fake_read", path="a.txt", mode="rw"), "parameter_mismatch", "unknown parameter 'mode'"),
    ("string-for-int", call("fake_read", path="a.txt", count="5"), "parameter_mismatch", "'count'"),
    ("float-for-int", call("fake_read", path="a.txt", count=1.5), "parameter_mismatch", "'count'"),
    ("int-for-path", call("fake_read", path=5), "parameter_mismatch", "'path'"),
    ("missing-field", call("fake_write", path="b.txt"), "parameter_mismatch", "missing required parameter 'content'"),
    ("unknown-tool", call("fake_delete", path="a.txt"), "unknown_tool", "there is no tool named 'fake_delete'"),
    ("bad-json", call("fake_read", '{"path": "a.txt"'), "invalid_json", "not valid JSON"),
    ("json-not-an-object", call("fake_read", '["a.txt"]'), "parameter_mismatch", "must be a JSON object"),
]


@pytest.mark.parametrize(("scripted", "kind", "words"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
async def test_the_controller_alone_refuses_and_the_tool_never_runs(
        workspace: Path, scripted: Any, kind: str, words: str) -> None:
    ran, results = await run_fakes(workspace, scripted)
    assert ran == []
    result = results[0]
    assert not result.ok
    assert result.error_kind is not None and result.error_kind.value == kind
    assert result.output.startswith(f"ERROR: {kind}: ") and words in result.output


# The boundaries the refusals above sit next to: without these, a controller refusing everything would pass.
ALLOWED: list[tuple[str, Any]] = [
    ("plain-read", call("fake_read", path="a.txt", count=2)),
    ("dotdot-that-stays-inside", call("fake_read", path="sub/../a.txt", count=0)),
    ("content-at-the-limit", call("fake_write", path="big.txt", content="x" * LIMIT)),
    ("multibyte-content-at-the-limit", call("fake_write", path="big.txt", content="é" * (LIMIT // 2))),
    ("write-a-new-file", call("fake_write", path="sub/new.txt", content="x")),
    ("a-dot-git-lookalike", call("fake_write", path="sub/git/x.txt", content="x")),
]


@pytest.mark.parametrize("scripted", [a[1] for a in ALLOWED], ids=[a[0] for a in ALLOWED])
async def test_a_call_inside_every_bound_reaches_the_tool(workspace: Path, scripted: Any) -> None:
    ran, results = await run_fakes(workspace, scripted)
    assert results[0].ok, results[0].output
    assert ran == [(scripted.name, json.loads(json.dumps(scripted.arguments)))]


async def test_one_refused_call_does_not_stop_its_neighbours(workspace: Path) -> None:
    ran, results = await run_fakes(workspace, call("fake_read", path="../outside.txt"),
                                   call("fake_read", path="a.txt"))
    assert [r.ok for r in results] == [False, True]
    assert ran == [("fake_read", {"path": "a.txt", "count": 0})]


# --- command lines: the session's command policy, applied by the controller -------------------


REFUSED_COMMANDS = [
    "rm -rf .",
    "/bin/ls",
    "git push origin main",
    "git commit -am wip",
    "git -c core.pager=sh log",
    "git config user.name x",
    "git diff --ext-diff",
    "rg --pre cat x",
    "cat ../outside.txt",
    "ls ~/",
    "python -c 'print(1)'\x01",
]


@pytest.mark.parametrize("command", REFUSED_COMMANDS)
async def test_the_controller_alone_refuses_a_command_line_the_policy_refuses(workspace: Path, command: str) -> None:
    ran, results = await run_fakes(workspace, call("fake_command", command=command))
    assert ran == []
    result = results[0]
    assert result.error_kind is not None and result.error_kind.value == "denied", result.output
    assert result.output.startswith(f"ERROR: refused: {shlex.join(shlex.split(command))}. ")


async def test_a_command_line_the_policy_allows_reaches_the_tool(workspace: Path) -> None:
    ran, results = await run_fakes(workspace, call("fake_command", command="git status"))
    assert results[0].ok, results[0].output
    assert ran == [("fake_command", {"command": "git status"})]


async def test_without_a_command_policy_no_command_line_gets_through(workspace: Path) -> None:
    ran, results = await run_fakes(workspace, call("fake_command", command="git status"), command_policy=None)
    assert ran == []
    assert results[0].error_kind is not None and results[0].error_kind.value == "denied"
    assert "No command may run in this session" in results[0].output


async def test_a_nul_in_a_command_line_is_refused_by_the_controller(workspace: Path) -> None:
    ran, results = await run_fakes(workspace, call("fake_command", command="git log a\x00b"))
    assert ran == []
    assert results[0].error_kind is not None and results[0].error_kind.value == "parameter_mismatch"
    assert "NUL" in results[0].output


# --- the same rules again inside run_command, before it starts a process --------------------------


@pytest.mark.parametrize("command", REFUSED_COMMANDS)
async def test_run_command_refuses_argv_before_any_process_starts(
        workspace: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    started: list[list[str]] = []

    async def no_process(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        started.append(argv)
        raise AssertionError("a refused command reached run_process")

    monkeypatch.setattr(run_command_module, "run_process", no_process)
    settings = load_settings(workspace, {})
    ctx = ToolContext(root=workspace, settings=settings, documents=None,  # type: ignore[arg-type]
                      applier=None, files=None)  # type: ignore[arg-type]
    tool = RunCommand()
    result = await tool.run(RunCommandArgs(command=command), ctx)
    assert started == []
    assert not result.ok and result.error_kind is not None and result.error_kind.value == "denied", result.output
    assert result.output.startswith("ERROR: refused: ")
    # Nothing to ask the user about either: a refused command is never put up for approval.
    assert tool.approval(RunCommandArgs(command=command), ctx) is None


async def test_run_command_starts_an_allowed_argv(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[list[str]] = []

    async def no_process(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        started.append(argv)
        raise OSError("not started in this test")

    monkeypatch.setattr(run_command_module, "run_process", no_process)
    ctx = ToolContext(root=workspace, settings=load_settings(workspace, {}), documents=None,  # type: ignore[arg-type]
                      applier=None, files=None)  # type: ignore[arg-type]
    result = await RunCommand().run(RunCommandArgs(command="git status"), ctx)
    assert started == [["git", "status"]], result.output


class FakeEffect(Recorder):
    """An effect outside any sandbox and without a command line (an MCP tool that may change things)."""

    name = "fake_effect"
    access = Access.EXEC
    args_model = ReadArgs


@pytest.mark.parametrize("mode", ["plan", "ask"])
async def test_plan_and_ask_refuse_an_effect_no_sandbox_confines(workspace: Path, mode: str) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    env = make_env(workspace, [reply(call("fake_effect", path="a.txt"), call("fake_read", path="a.txt")),
                               reply(text="done")], mode=mode)
    env = replace(env, registry=ToolRegistry([FakeRead(ran), FakeEffect(ran)]), tool_view=None)
    session = AgentSession(env)
    await Generation(session, 3).run("go")
    effect, read = [r for m in session.history for r in m.tool_results()]
    assert effect.error_kind == "denied" and f"{mode.capitalize()} mode" in effect.output
    assert read.error_kind is None
    assert ran == [("fake_read", {"path": "a.txt", "count": 0})]
