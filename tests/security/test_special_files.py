"""Special files never stall the harness.

A command (or the repository itself) turns `.gitignore`, `.git/info/exclude` or a source file into
a FIFO. Opening a FIFO for reading blocks until a writer appears, so git and rg used to hang until
the 120 s command timeout on every call, and the fingerprint's `git status` for minutes. Now the
harness's own programs have a short timeout of their own with a fallback, names they would block
on are seen before they start, and no harness tool opens anything but a regular file.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import pytest

from lsp_agent.core.tools import FileTracker, ToolContext
from lsp_agent.core.write_detect import WriteDetector
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.edits import ApplyResult, EditPlan
from lsp_agent.sandbox import git as sandbox_git
from lsp_agent.settings.config import Limits, Settings, ToolSettings, VerifyCommand
from lsp_agent.tools.list_dir import ListDir, ListDirArgs, git_ignored_paths
from lsp_agent.tools.read_file import ReadFile, ReadFileArgs
from lsp_agent.tools.search_code import SearchCode, SearchCodeArgs
from lsp_agent.tools.verify_project import VerifyProject, VerifyProjectArgs
from tests.providers.loopback import LoopbackServer
from tests.security.conftest import needs_bwrap
from tests.security.kit import Attack, run_attack

#: The internal timeout the tests set: small, so a stall costs seconds.
INTERNAL_S = 2.0
#: Every call must return within this (the command timeout is 120 s); generous for a loaded machine.
BOUND_S = 40.0
T = TypeVar("T")


class _NoApplier:
    async def apply(self, plan: EditPlan) -> ApplyResult:
        return ApplyResult(ok=False, message="read-only test context")

    async def flush(self, paths: list[str]) -> ApplyResult:
        return ApplyResult(ok=True)


def _ctx(root: Path) -> ToolContext:
    settings = Settings(limits=Limits(internal_timeout_s=INTERNAL_S),
                        tools=ToolSettings(verify=[VerifyCommand(kind="test", argv=[sys.executable, "-c", "pass"])]))
    return ToolContext(root=root, settings=settings, documents=DiskDocuments(root), applier=_NoApplier(),
                       files=FileTracker())


async def _bounded(call: Awaitable[T]) -> T:
    started = time.monotonic()
    result = await asyncio.wait_for(call, BOUND_S)  # a stall is a TimeoutError here: the test fails
    assert time.monotonic() - started < BOUND_S
    return result


def _repository(root: Path) -> None:
    (root / "a.py").write_text("needle = 1\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "b.py").write_text("needle = 2\n", encoding="utf-8")
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], cwd=root, check=True)


def _fifo(path: Path) -> None:
    if path.exists():
        path.unlink()
    os.mkfifo(path)


#: where the FIFO goes: seen before git starts (the root's ignore files, .git/info/exclude), or
#: only by git while it walks (a subdirectory's .gitignore), where the internal timeout ends it
PLACES = [".gitignore", ".git/info/exclude", "sub/.gitignore"]


@pytest.mark.parametrize("place", PLACES)
async def test_a_fifo_ignore_file_never_stalls_a_tool(tmp_path: Path, place: str) -> None:
    _repository(tmp_path)
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    _fifo(tmp_path / place)
    ctx = _ctx(tmp_path)

    listing = await _bounded(ListDir().run(ListDirArgs(path=".", depth=2), ctx))
    assert listing.ok and "sub/b.py" in listing.output
    assert "NOTE: git-ignored files are included" in listing.output, listing.output

    for engine in (True, False):
        found = await _bounded(SearchCode(use_ripgrep=engine).run(SearchCodeArgs(pattern="needle"), ctx))
        assert found.ok and "a.py:1: needle = 1" in found.output and "sub/b.py:1: needle = 2" in found.output
        assert "NOTE: git-ignored files are included" in found.output, (engine, found.output)

    verify = await _bounded(VerifyProject().run(VerifyProjectArgs(), ctx))
    assert verify.ok, verify.output
    assert "NOTE: the sources were fingerprinted without git" in verify.output
    assert verify.metadata["envelope"]["revision"] is None

    read = await _bounded(ReadFile().run(ReadFileArgs(path=place), ctx))
    assert not read.ok and read.output == (f"ERROR: {place} is a FIFO, not a regular file; it was not opened "
                                           "(reading it could block forever or never end). Read regular files only.")

    # Write detection cannot ask git: every change counts (never fewer writes than happened).
    detector = WriteDetector(tmp_path.resolve(), git_ignored_paths)
    await detector.begin()
    (tmp_path / "a.py").write_text("needle = 3\n", encoding="utf-8")
    assert await _bounded(detector.end()) == ["a.py"]

    # The session goes on: a regular file is still read.
    again = await _bounded(ReadFile().run(ReadFileArgs(path="a.py"), ctx))
    assert again.ok and "needle = 1" not in again.output and "needle = 3" in again.output


async def test_a_fifo_among_the_sources_is_listed_skipped_and_refused(tmp_path: Path) -> None:
    _repository(tmp_path)
    _fifo(tmp_path / "data.py")
    ctx = _ctx(tmp_path)
    listing = await _bounded(ListDir().run(ListDirArgs(path="."), ctx))
    assert listing.ok and "data.py" in listing.output.splitlines() and "NOTE" not in listing.output
    for engine in (True, False):
        found = await _bounded(SearchCode(use_ripgrep=engine).run(SearchCodeArgs(pattern="needle"), ctx))
        assert found.ok and found.metadata["files"] == ["a.py", "sub/b.py"], (engine, found.output)
    verify = await _bounded(VerifyProject().run(VerifyProjectArgs(), ctx))
    assert verify.ok and verify.metadata["envelope"]["revision"] is not None, verify.output
    read = await _bounded(ReadFile().run(ReadFileArgs(path="data.py"), ctx))
    assert not read.ok and "data.py is a FIFO, not a regular file" in read.output


@needs_bwrap
async def test_a_fifo_made_by_a_command_never_stalls_the_run(attack: Attack, server: LoopbackServer) -> None:
    # Through the real loop: the command turns .gitignore into a FIFO; every later tool answers at
    # once (the default internal timeout is never even reached: the FIFO is seen before git starts).
    _repository(attack.workspace)
    (attack.workspace / "test_ok.py").write_text("def test_ok():\n    pass\n", encoding="utf-8")
    started = time.monotonic()
    await run_attack(attack, server, [
        ("run_command", {"command": "python3 -c \"import os; os.remove('.gitignore'); os.mkfifo('.gitignore')\""}),
        ("list_dir", {"path": "."}),
        ("search_code", {"pattern": "needle"}),
        ("read_file", {"path": ".gitignore"}),
        ("verify_project", {}),
        ("read_file", {"path": "a.py"}),
    ])
    assert time.monotonic() - started < 100  # a single stalled call took 120 s before
    outputs = attack.outputs()
    assert outputs[0].startswith("OK: exit=0"), outputs[0]
    assert "NOTE: git-ignored files are included: git ls-files was not run: .gitignore is a FIFO" in outputs[1]
    assert "a.py:1: needle = 1" in outputs[2] and "NOTE: git-ignored files are included" in outputs[2]
    assert outputs[3].startswith("ERROR: .gitignore is a FIFO, not a regular file")
    assert "NOTE: the sources were fingerprinted without git" in outputs[4], outputs[4]
    assert "needle = 1" in outputs[5]
    attack.assert_contained()


def test_the_internal_timeout_is_a_limit_of_its_own() -> None:
    limits = Limits()
    assert limits.internal_timeout_s == 15 and limits.internal_timeout_s < limits.command_timeout_s


@pytest.mark.parametrize("place", ["config", "included"])
async def test_a_fifo_git_config_refuses_git_instead_of_stalling(tmp_path: Path, place: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # The repository came that way (or a command wrote the included workspace file as a FIFO): git
    # would block reading its configuration, and overrides computed without it would protect nothing.
    monkeypatch.setattr(sandbox_git, "CONFIG_LIST_TIMEOUT_S", INTERNAL_S)
    _repository(tmp_path)
    config = tmp_path / ".git" / "config"
    if place == "config":
        _fifo(config)
    else:
        config.write_text(config.read_text() + "[include]\n\tpath = ../extra.cfg\n", encoding="utf-8")
        _fifo(tmp_path / "extra.cfg")
    ctx = _ctx(tmp_path)
    listing = await _bounded(ListDir().run(ListDirArgs(path="."), ctx))
    assert listing.ok and "NOTE: git-ignored files are included: git was not run" in listing.output
    found = await _bounded(SearchCode(use_ripgrep=False).run(SearchCodeArgs(pattern="needle"), ctx))
    assert found.ok and "a.py:1: needle = 1" in found.output and "git was not run" in found.output
    verify = await _bounded(VerifyProject().run(VerifyProjectArgs(), ctx))
    assert not verify.ok and "could not fingerprint the sources" in verify.output, verify.output
    again = await _bounded(ReadFile().run(ReadFileArgs(path="a.py"), ctx))
    assert again.ok
