"""The harness's own git (list_dir, search_code's ignore rules, verify_project's fingerprint, write
detection) never runs what a repository's configuration names, wherever that configuration sits.

Each attack plants the same program-running keys — fsmonitor, a hooks path with a hook, a pager,
an external diff, a textconv driver, clean/smudge/process filters picked by .gitattributes — each
of which would create a canary file in a directory outside /tmp and outside the workspace. The
keys are planted in .git/config, in a `config.worktree` (extensions.worktreeConfig), in a workspace
file named by `include.path`, and in one named by `includeIf "gitdir:..."`.

Two protections hold independently, and each is tested alone: the configuration overrides
(sandbox.git; the only one where bubblewrap cannot run) and the read-only sandbox the internal
programs run in. With both removed the canaries appear (see test_unprotected_git_runs_the_planted_programs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_agent.core.tools import FileTracker, ToolContext, ToolResult
from lsp_agent.core.write_detect import WriteDetector
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.edits import ApplyResult, EditPlan
from lsp_agent.sandbox import git as sandbox_git
from lsp_agent.settings.config import Settings, ToolSettings, VerifyCommand
from lsp_agent.tools import internal
from lsp_agent.tools.list_dir import ListDir, ListDirArgs, git_ignored_paths
from lsp_agent.tools.search_code import SearchCode, SearchCodeArgs
from lsp_agent.tools.verify_project import VerifyProject, VerifyProjectArgs
from tests.providers.loopback import LoopbackServer
from tests.security.conftest import needs_bwrap
from tests.security.kit import Attack, run_attack

CANARIES = ("fsmonitor", "hook", "pager", "external", "textconv", "clean", "smudge", "process")
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "init.defaultBranch=main"]


class _NoApplier:
    async def apply(self, plan: EditPlan) -> ApplyResult:
        return ApplyResult(ok=False, message="read-only test context")

    async def flush(self, paths: list[str]) -> ApplyResult:
        return ApplyResult(ok=True)


@pytest.fixture
def markers() -> Iterator[Path]:
    # Outside /tmp: a sandboxed program sees the host's /var/tmp read-only, not a private tmpfs.
    base = Path(tempfile.mkdtemp(prefix="lsp-agent-markers-", dir="/var/tmp"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _hostile_keys(markers: Path) -> str:
    return (f"[core]\n\tfsmonitor = \"touch {markers}/fsmonitor; false\"\n\thooksPath = evil-hooks\n"
            f"\tpager = \"touch {markers}/pager; cat\"\n"
            f"[diff]\n\texternal = \"touch {markers}/external\"\n"
            f"[diff \"evil\"]\n\ttextconv = \"touch {markers}/textconv; cat\"\n"
            f"[filter \"evil\"]\n\tclean = \"touch {markers}/clean; cat\"\n\tsmudge = \"touch {markers}/smudge; cat\"\n"
            f"\tprocess = \"touch {markers}/process\"\n\trequired = true\n")


def build_hostile_repository(root: Path, markers: Path, place: str) -> None:
    """A committed repository whose configuration (at `place`) names programs, with a modified,
    an untracked and an ignored file so that every internal git call has work to do."""
    (root / "a.txt").write_text("one\n", encoding="utf-8")
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")
    subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "x"], cwd=root, check=True)
    keys = _hostile_keys(markers)
    config = root / ".git" / "config"
    if place == "local":
        config.write_text(config.read_text() + keys, encoding="utf-8")
    elif place == "worktree":
        subprocess.run(["git", "config", "extensions.worktreeConfig", "true"], cwd=root, check=True)
        (root / ".git" / "config.worktree").write_text(keys, encoding="utf-8")
    elif place == "include":
        (root / "evil.cfg").write_text(keys, encoding="utf-8")  # a workspace file: commands can rewrite it
        config.write_text(config.read_text() + "[include]\n\tpath = ../evil.cfg\n", encoding="utf-8")
    elif place == "includeIf":
        (root / "evil.cfg").write_text(keys, encoding="utf-8")
        config.write_text(config.read_text() + f"[includeIf \"gitdir:{root}/\"]\n\tpath = {root}/evil.cfg\n",
                          encoding="utf-8")
    else:
        raise AssertionError(place)
    hooks = root / "evil-hooks"
    hooks.mkdir()
    for name in ("post-index-change", "reference-transaction", "post-checkout", "pre-auto-gc"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\ntouch {markers}/hook\n", encoding="utf-8")
        hook.chmod(0o755)
    (root / ".gitattributes").write_text("* diff=evil filter=evil\n", encoding="utf-8")
    (root / "a.txt").write_text("two\n", encoding="utf-8")
    (root / "new.py").write_text("x = 1\n", encoding="utf-8")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_text("obj\n", encoding="utf-8")


def _ctx(root: Path) -> ToolContext:
    settings = Settings(tools=ToolSettings(verify=[VerifyCommand(kind="test", argv=[sys.executable, "-c", "pass"])]))
    return ToolContext(root=root, settings=settings, documents=DiskDocuments(root), applier=_NoApplier(),
                       files=FileTracker())


async def _every_internal_caller(root: Path) -> dict[str, ToolResult | set[str]]:
    """list_dir, search_code (both engines), verify_project, and write detection, in that order."""
    ctx = _ctx(root)
    out: dict[str, ToolResult | set[str]] = {
        "list_dir": await ListDir().run(ListDirArgs(path="."), ctx),
        "search_code (python)": await SearchCode(use_ripgrep=False).run(SearchCodeArgs(pattern="two"), ctx),
        "search_code (rg)": await SearchCode(use_ripgrep=True).run(SearchCodeArgs(pattern="two"), ctx),
        "verify_project": await VerifyProject().run(VerifyProjectArgs(), ctx),
    }
    detector = WriteDetector(root.resolve(), git_ignored_paths)
    await detector.begin()
    (root / "a.txt").write_text("three\n", encoding="utf-8")
    (root / "build" / "more.o").write_text("obj\n", encoding="utf-8")
    out["write detection"] = set(await detector.end())
    return out


def _fired(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def _overrides_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_git, "GIT_SAFE_CONFIG", ())
    monkeypatch.setattr(sandbox_git, "overrides_for", lambda entries: [])
    sandbox_git._CACHE.clear()


def _sandbox_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(internal, "internal_sandbox", lambda root: None)


PLACES = ["local", "worktree", "include", "includeIf"]


@pytest.mark.parametrize("place", PLACES)
async def test_overrides_alone_run_nothing_the_repository_names(tmp_path: Path, markers: Path, place: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Where bubblewrap cannot run, the configuration overrides are all there is.
    _sandbox_removed(monkeypatch)
    build_hostile_repository(tmp_path, markers, place)
    results = await _every_internal_caller(tmp_path)
    assert _fired(markers) == []
    listing = results["list_dir"]
    assert isinstance(listing, ToolResult) and listing.ok and "new.py" in listing.output
    assert "build/" not in listing.output  # git's ignore rules were still applied
    verify = results["verify_project"]
    assert isinstance(verify, ToolResult) and verify.ok, verify.output
    for engine in ("search_code (python)", "search_code (rg)"):
        found = results[engine]
        assert isinstance(found, ToolResult) and "a.txt:1: two" in found.output, found
    assert results["write detection"] == {"a.txt"}  # build/more.o is ignored, as git says


@needs_bwrap
@pytest.mark.parametrize("place", PLACES)
async def test_the_read_only_sandbox_alone_contains_what_runs(tmp_path: Path, markers: Path, place: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # With every override removed the planted programs may start, but inside the internal programs'
    # sandbox nothing of the host is writable: no canary appears.
    _overrides_removed(monkeypatch)
    build_hostile_repository(tmp_path, markers, place)
    await _every_internal_caller(tmp_path)
    assert _fired(markers) == []


@needs_bwrap
async def test_both_protections_together_keep_the_tools_working(tmp_path: Path, markers: Path) -> None:
    build_hostile_repository(tmp_path, markers, "worktree")
    results = await _every_internal_caller(tmp_path)
    assert _fired(markers) == []
    verify = results["verify_project"]
    assert isinstance(verify, ToolResult) and verify.ok, verify.output
    # git still works inside the sandbox: the revision is known (a git that failed there, e.g. on
    # ownership, would silently fingerprint the sources as if outside Git)
    assert verify.metadata["envelope"]["revision"] is not None
    assert results["write detection"] == {"a.txt"}


async def test_unprotected_git_runs_the_planted_programs(tmp_path: Path, markers: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # The attack is real: with both protections removed, the same calls start the planted programs.
    _sandbox_removed(monkeypatch)
    _overrides_removed(monkeypatch)
    build_hostile_repository(tmp_path, markers, "worktree")
    await _every_internal_caller(tmp_path)
    assert {"fsmonitor", "process"} <= set(_fired(markers))


async def test_a_repository_that_appears_later_is_read_again(tmp_path: Path, markers: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # The workspace had no .git when the session started; a command (or the user) made one since.
    _sandbox_removed(monkeypatch)
    ctx = _ctx(tmp_path)
    (tmp_path / "a.txt").write_text("one\n", encoding="utf-8")
    first = await ListDir().run(ListDirArgs(path="."), ctx)
    assert first.ok
    build_hostile_repository(tmp_path, markers, "worktree")
    await _every_internal_caller(tmp_path)
    assert _fired(markers) == []


async def test_an_included_file_rewritten_later_is_read_again(tmp_path: Path, markers: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # The included file is in the workspace: a command writes it after the config was first read,
    # harmless at first, then not there at all, then hostile.
    _sandbox_removed(monkeypatch)
    build_hostile_repository(tmp_path, markers, "include")
    for harmless in ("[user]\n\tname = harmless\n", None):
        if harmless is None:
            (tmp_path / "evil.cfg").unlink()
        else:
            (tmp_path / "evil.cfg").write_text(harmless, encoding="utf-8")
        assert (await ListDir().run(ListDirArgs(path="."), _ctx(tmp_path))).ok
    (tmp_path / "evil.cfg").write_text(_hostile_keys(markers), encoding="utf-8")
    await _every_internal_caller(tmp_path)
    assert _fired(markers) == []


async def test_git_variables_of_the_server_never_reach_internal_git(tmp_path: Path, markers: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # GIT_* in the server's own environment (a parent tool, a hostile launcher) are not passed on.
    _sandbox_removed(monkeypatch)
    build_hostile_repository(tmp_path, markers, "local")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='touch {markers}/fsmonitor; false'")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", f"touch {markers}/external")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    results = await _every_internal_caller(tmp_path)
    assert _fired(markers) == []
    verify = results["verify_project"]
    assert isinstance(verify, ToolResult) and verify.ok, verify.output


async def test_core_worktree_in_an_included_file_refuses_git(tmp_path: Path, markers: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _sandbox_removed(monkeypatch)
    build_hostile_repository(tmp_path, markers, "include")
    (tmp_path / "evil.cfg").write_text(f"[core]\n\tworktree = {markers}\n", encoding="utf-8")
    listing = await ListDir().run(ListDirArgs(path="."), _ctx(tmp_path))
    assert listing.ok and "git-ignored files are included: git was not run" in listing.output
    assert "core.worktree" in listing.output


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the checkout to another user")
async def test_the_users_safe_directory_still_holds_inside_the_sandbox(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # A checkout owned by another user (a container running as root on a mounted checkout): git
    # refuses it as "dubious ownership" unless the user's own config says it is safe. The internal
    # git runs with $HOME hidden, so that answer is carried to it on the command line; a
    # repository's own safe.directory is never honoured (git reads it only from protected scopes).
    home = tmp_path / "home"
    home.mkdir()
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_text("obj\n", encoding="utf-8")
    subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
    subprocess.run(["chown", "-R", "65534:65534", str(root)], check=True)
    monkeypatch.setenv("HOME", str(home))
    subprocess.run(["git", "config", "--global", "safe.directory", str(root)], check=True)
    listing = await ListDir().run(ListDirArgs(path="."), _ctx(root))
    assert listing.ok and "build/" not in listing.output, listing.output  # git answered


BUILD = """
import pathlib, subprocess, sys
root, markers = pathlib.Path.cwd(), sys.argv[1]
git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "init.defaultBranch=main"]
(root / "a.txt").write_text("one\\n")
subprocess.run([*git, "init", "-q"], check=True)
subprocess.run([*git, "add", "a.txt"], check=True)
subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
subprocess.run(["git", "config", "extensions.worktreeConfig", "true"], check=True)
(root / ".git" / "config.worktree").write_text(
    f'[core]\\n\\tfsmonitor = "touch {markers}/fsmonitor; false"\\n'
    f'[filter "evil"]\\n\\tclean = "touch {markers}/clean; cat"\\n\\tprocess = "touch {markers}/process"\\n'
    '\\trequired = true\\n')
(root / ".gitattributes").write_text("* filter=evil\\n")
(root / "a.txt").write_text("two\\n")
"""


@pytest.mark.parametrize("bwrap", [pytest.param("available", marks=needs_bwrap), "missing"])
async def test_a_repository_a_command_builds_runs_nothing_through_the_loop(
        attack: Attack, server: LoopbackServer, markers: Path, bwrap: str) -> None:
    # Through the real CLI: the workspace has no .git at start; a command (unsandboxed: the user
    # chose danger-full-access) builds one whose worktree config names programs; then every tool
    # that runs git for the harness. With bwrap missing only the overrides stand between.
    (attack.workspace / "build_repo.py").write_text(BUILD, encoding="utf-8")
    (attack.workspace / "test_ok.py").write_text("def test_ok():\n    pass\n", encoding="utf-8")
    env = {} if bwrap == "available" else {"LSP_AGENT_BWRAP": "/nonexistent/bwrap"}
    await run_attack(attack, server, [
        ("list_dir", {"path": "."}),
        ("run_command", {"command": f"python3 build_repo.py {markers}"}),
        ("list_dir", {"path": "."}),
        ("search_code", {"pattern": "two"}),
        ("verify_project", {}),
        ("run_command", {"command": "git status --short"}),
    ], "--sandbox", "danger-full-access", env=env)
    assert _fired(markers) == []
    outputs = attack.outputs()
    assert outputs[1].startswith("OK: exit=0"), outputs[1]
    assert "a.txt:1: two" in outputs[3]
    assert outputs[4].startswith("OK: verify passed"), outputs[4]
    attack.assert_contained()


@needs_bwrap
@pytest.mark.parametrize("layout", ["subdirectory", "linked worktree"])
async def test_internal_git_in_the_sandbox_still_finds_a_repository_outside_the_workspace(
        tmp_path: Path, layout: str) -> None:
    # The workspace is a subdirectory of a repository, or a linked worktree whose git directory is
    # elsewhere: the read-only sandbox shows git the repository too (read-only), or the fingerprint
    # would silently lose the revision and list_dir the ignore rules.
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "sub" / "a.py").write_text("x = 1\n", encoding="utf-8")
    (repo / ".gitignore").write_text("build/\n", encoding="utf-8")
    subprocess.run([*GIT, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "x"], cwd=repo, check=True)
    if layout == "subdirectory":
        root = repo / "sub"
    else:
        root = tmp_path / "wt"
        subprocess.run([*GIT, "worktree", "add", "-q", str(root)], cwd=repo, check=True)
    (root / "build").mkdir()
    (root / "build" / "out.o").write_text("obj\n", encoding="utf-8")
    ctx = _ctx(root)
    listing = await ListDir().run(ListDirArgs(path="."), ctx)
    assert listing.ok and "build/" not in listing.output, listing.output
    verify = await VerifyProject().run(VerifyProjectArgs(), ctx)
    assert verify.ok and verify.metadata["envelope"]["revision"] is not None, verify.output


async def test_a_submodules_own_configuration_never_runs(tmp_path: Path, markers: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # A submodule has a configuration of its own (.git/modules/<name>/config) that the listing of
    # the superproject does not show; the fingerprint never starts git inside it.
    _sandbox_removed(monkeypatch)
    library = tmp_path / "library"
    library.mkdir()
    (library / "lib.txt").write_text("one\n", encoding="utf-8")
    subprocess.run([*GIT, "init", "-q"], cwd=library, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=library, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "x"], cwd=library, check=True)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n", encoding="utf-8")
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")
    (root / "build").mkdir()
    subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
    subprocess.run([*GIT, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib"],
                   cwd=root, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "x"], cwd=root, check=True)
    config = root / ".git" / "modules" / "lib" / "config"
    config.write_text(config.read_text() + f"[filter \"evil\"]\n\tprocess = \"touch {markers}/process\"\n"
                      f"\tclean = \"touch {markers}/clean; cat\"\n\trequired = true\n", encoding="utf-8")
    (root / "lib" / ".gitattributes").write_text("* filter=evil\n", encoding="utf-8")
    (root / "lib" / "lib.txt").write_text("two\n", encoding="utf-8")
    results = await _every_internal_caller(root)
    assert _fired(markers) == []
    verify = results["verify_project"]
    assert isinstance(verify, ToolResult) and verify.ok, verify.output


async def test_a_nearer_repository_made_later_is_read_again(tmp_path: Path, markers: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # The workspace is a subdirectory of a harmless repository, read first; then a hostile .git
    # appears in the workspace itself (danger-full-access, or the user's own checkout step).
    _sandbox_removed(monkeypatch)
    outer = tmp_path / "outer"
    root = outer / "ws"
    root.mkdir(parents=True)
    subprocess.run([*GIT, "init", "-q"], cwd=outer, check=True)
    (root / "a.txt").write_text("one\n", encoding="utf-8")
    assert (await ListDir().run(ListDirArgs(path="."), _ctx(root))).ok
    (root / "a.txt").unlink()
    build_hostile_repository(root, markers, "local")
    await _every_internal_caller(root)
    assert _fired(markers) == []
