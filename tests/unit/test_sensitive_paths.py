"""Sensitive paths: the globs, the edit tools' approval through the real loop, the harness's
mount points for missing protected directories, and the removal of what a command planted.

No process is started here (the attacks through real sandboxed commands are in
tests/security/test_protected_paths.py); the file-system steps run on a real temp directory.
"""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pydantic
import pytest

from lsp_agent.core.approval import Answer, ApprovalRequest, Decision
from lsp_agent.core.loop import Generation
from lsp_agent.core.sensitive_paths import matching, static_prefix, whole_tree
from lsp_agent.core.session import AgentSession
from lsp_agent.sandbox import mount_points
from lsp_agent.sandbox.sensitive_watch import look, read_only_binds, undo_new
from lsp_agent.settings.config import SENSITIVE_PATHS, ToolSettings
from tests.helpers import call, make_env, reply


class Desk:
    def __init__(self, *answers: Decision) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return Answer(self.answers.pop(0), "user")


def test_the_globs_anchor_at_the_root_ignore_case_and_name_whole_trees() -> None:
    defaults = list(SENSITIVE_PATHS)
    for rel in (".vscode/tasks.json", ".VSCode/Tasks.JSON", ".envrc", "./.envrc", ".github/workflows",
                ".github/workflows/ci.yml", ".github/workflows/sub/x.yml", "my.code-workspace", ".husky/pre-commit",
                ".devcontainer/devcontainer.json", ".nvim.lua"):
        assert matching(rel, defaults) is not None, rel
    for rel in ("sub/.vscode/tasks.json", ".vscode/extensions.json", ".github/dependabot.yml", "src/.envrc.py",
                ".github/workflowsx/a.yml", "README.md"):
        assert matching(rel, defaults) is None, rel
    assert matching("a/b/c/.envrc", ["**/.envrc"]) == "**/.envrc"
    assert matching("x1.txt", ["x[0-9].txt"]) and not matching("xa.txt", ["x[0-9].txt"])
    assert static_prefix(".github/workflows/**") == ([".github", "workflows"], False)
    assert whole_tree(".github/workflows/**") and not whole_tree("**/.envrc")


async def _edit(root: Path, calls: list[object], desk: Desk, policy: str = "on-request") -> AgentSession:
    env = make_env(root, [*[reply(c) for c in calls], reply(text="ok")], approvalPolicy=policy)  # type: ignore[list-item]
    env.approver = desk
    session = AgentSession(env)
    await Generation(session).run("go")
    return session


def _outputs(session: AgentSession) -> list[str]:
    return [p.output for m in session.history for p in m.tool_results()]


async def test_an_approved_edit_of_a_sensitive_path_shows_the_diff_and_writes(tmp_path: Path) -> None:
    desk = Desk(Decision.ALLOW_ONCE)
    session = await _edit(tmp_path, [call("write_file", path=".envrc", content="export A=1\n")], desk)
    (request,) = desk.asked
    assert (request.kind, request.reason.value, request.tool) == ("edit", "sensitive_path", "write_file")
    assert "+++ b/.envrc" in request.what and "+export A=1" in request.what
    assert ".envrc" in request.why and "tools.sensitive_paths" in request.why
    assert (tmp_path / ".envrc").read_text() == "export A=1\n", _outputs(session)


async def test_a_denied_edit_writes_nothing_and_a_plain_edit_asks_nothing(tmp_path: Path) -> None:
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "settings.json").write_text("{}\n", encoding="utf-8")
    desk = Desk(Decision.DENY)
    session = await _edit(tmp_path, [
        call("apply_patch", path=".vscode/settings.json", old_text="{}", new_text='{"a": 1}'),
        call("write_file", path="src/ok.py", content="x = 1\n"),
    ], desk)
    assert len(desk.asked) == 1 and "-{}" in desk.asked[0].what and '+{"a": 1}' in desk.asked[0].what
    assert (tmp_path / ".vscode" / "settings.json").read_text() == "{}\n"
    outs = _outputs(session)
    assert outs[0].startswith("ERROR: refused") and outs[1].startswith("OK: created src/ok.py")


async def test_a_session_grant_covers_exactly_the_edit_shown(tmp_path: Path) -> None:
    desk = Desk(Decision.ALLOW_SESSION, Decision.DENY)
    patch = "*** Begin Patch\n*** Add File: .husky/pre-commit\n+npm test\n*** End Patch\n"
    other = "*** Begin Patch\n*** Update File: .husky/pre-commit\n@@\n-npm test\n+npm run lint\n*** End Patch\n"
    session = await _edit(tmp_path, [call("apply_patch", patch=patch), call("apply_patch", patch=other)], desk)
    assert [r.what.splitlines()[1] for r in desk.asked] == ["*** Add File: .husky/pre-commit",
                                                             "*** Update File: .husky/pre-commit"]
    assert "exactly this edit" in desk.asked[0].session_scope
    assert (tmp_path / ".husky" / "pre-commit").read_text() == "npm test\n"  # the other edit was denied
    assert _outputs(session)[1].startswith("ERROR: refused")


async def test_never_refuses_with_a_reason_and_asks_no_one(tmp_path: Path) -> None:
    desk = Desk()
    session = await _edit(tmp_path, [call("write_file", path=".github/workflows/ci.yml", content="on: push\n")],
                          desk, policy="never")
    assert not desk.asked and not (tmp_path / ".github").exists()
    assert "approvalPolicy is `never`" in _outputs(session)[0]


async def test_a_link_leading_to_a_sensitive_path_counts_as_that_path(tmp_path: Path) -> None:
    os.symlink(".envrc", tmp_path / "innocent")
    desk = Desk(Decision.DENY)
    await _edit(tmp_path, [call("write_file", path="innocent", content="x\n")], desk)
    assert desk.asked and desk.asked[0].reason.value == "sensitive_path"


def test_mount_points_are_counted_and_removed_only_when_empty(tmp_path: Path) -> None:
    git, nested = tmp_path / ".git", tmp_path / "data" / "gitdir"
    first = mount_points.hold([git, nested])
    second = mount_points.hold([git])
    assert git.is_dir() and nested.is_dir() and mount_points.held()[git] == 2
    first.release()
    assert git.is_dir() and not (tmp_path / "data").exists()  # its parent was made for it too
    (git / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")  # the user's own `git init`
    second.release()
    assert (git / "HEAD").exists() and git not in mount_points.held()
    existing = mount_points.hold([git])  # already there: used, never removed
    existing.release()
    assert (git / "HEAD").exists()


async def test_concurrent_holders_share_one_mount_point(tmp_path: Path) -> None:
    lsp = tmp_path / ".lsp-agent"

    async def command() -> None:
        lease = await asyncio.to_thread(mount_points.hold, [lsp])
        assert lsp.is_dir()
        await asyncio.sleep(0)
        await asyncio.to_thread(lease.release)

    await asyncio.gather(*(command() for _ in range(20)))
    assert not lsp.exists() and lsp not in mount_points.held()


def test_what_a_command_planted_is_removed_and_a_replaced_link_put_back(tmp_path: Path) -> None:
    patterns = list(SENSITIVE_PATHS)
    (tmp_path / "real.envrc").write_text("user\n", encoding="utf-8")
    os.symlink("real.envrc", tmp_path / ".envrc")
    (tmp_path / "elsewhere").mkdir()
    before = look(tmp_path, patterns)
    assert tmp_path / "real.envrc" in read_only_binds(tmp_path, patterns, before)
    # What a command does: replace the link, make .vscode a link to a directory it filled, add a workflow.
    os.unlink(tmp_path / ".envrc")
    (tmp_path / ".envrc").write_text("evil\n", encoding="utf-8")
    (tmp_path / "elsewhere" / "tasks.json").write_text("{}", encoding="utf-8")
    os.symlink("elsewhere", tmp_path / ".vscode")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "x.yml").write_text("on: push\n", encoding="utf-8")
    removed = undo_new(tmp_path, patterns, before)
    assert sorted(removed) == [".envrc", ".github/workflows", ".vscode"]
    assert os.readlink(tmp_path / ".envrc") == "real.envrc"
    assert not (tmp_path / ".vscode").exists() and not (tmp_path / ".github").exists()
    assert (tmp_path / "elsewhere" / "tasks.json").exists()  # not followed: only the link went


def test_a_wildcard_pattern_is_looked_for_only_as_deep_as_it_reaches_and_never_through_a_link(
        tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "ws"
    (root / "deep" / "er").mkdir(parents=True)
    (root / "deep" / "er" / "x.code-workspace").write_text("{}", encoding="utf-8")  # below what it names
    os.symlink(outside, root / "hooks")
    before = look(root, ["*.code-workspace", "hooks/*"])
    assert list(before) == ["hooks"]  # the link itself, never what is behind it
    # Files appear outside, behind the link (another program's): never the harness's to remove.
    (outside / "other").write_text("keep\n", encoding="utf-8")
    (root / "new.code-workspace").write_text("{}", encoding="utf-8")
    assert undo_new(root, ["*.code-workspace", "hooks/*"], before) == ["new.code-workspace"]
    assert (outside / "other").exists() and (root / "deep" / "er" / "x.code-workspace").exists()


def test_a_pattern_reaching_outside_the_workspace_is_refused_by_the_settings_and_ignored_otherwise(
        tmp_path: Path) -> None:
    with pytest.raises(pydantic.ValidationError, match=r"without '\.\.'"):
        ToolSettings(sensitive_paths=["../../etc/**"])
    root = tmp_path / "ws"
    root.mkdir()
    before = look(root, ["../*"])
    (tmp_path / "sibling").write_text("not the workspace's\n", encoding="utf-8")
    assert before == {} and undo_new(root, ["../*"], before) == [] and (tmp_path / "sibling").exists()
    assert matching("../x", ["../x"]) is None


async def test_an_approved_edit_made_while_a_command_runs_elsewhere_is_not_cleaned_up(tmp_path: Path) -> None:
    patterns = list(SENSITIVE_PATHS)
    before = look(tmp_path, patterns)  # a command of another session starts
    await _edit(tmp_path, [call("write_file", path=".envrc", content="export A=1\n"),
                           call("write_file", path=".nvimrc", content="set exrc\n")],
                Desk(Decision.ALLOW_ONCE, Decision.ALLOW_ONCE))
    with open(tmp_path / ".nvimrc", "a", encoding="utf-8") as changed:  # the command, after the approval
        changed.write("lua os.execute('touch CANARY')\n")
    assert undo_new(tmp_path, patterns, before) == [".nvimrc"]
    assert (tmp_path / ".envrc").read_text() == "export A=1\n"


def test_a_workspace_nobody_can_write_needs_no_mount_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def read_only_file_system(path: object, mode: int = 0o777) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(os, "mkdir", read_only_file_system)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    lease = mount_points.hold([tmp_path / ".git"])  # nothing to protect: no one can create it
    assert lease.paths == [] and not (tmp_path / ".git").exists()
    monkeypatch.setattr(os, "access", lambda path, mode: True)
    with pytest.raises(OSError):  # writable, yet not made: the command must not run unprotected
        mount_points.hold([tmp_path / ".git"])


def test_the_editor_request_carries_the_sensitive_path_reason() -> None:
    from lsp_agent.core.approval import OPTIONS, Reason
    from lsp_agent.protocol.approval_models import RequestApprovalParams

    params = RequestApprovalParams(session_id="s", generation="g", call_id="c", tool="write_file", kind="edit",
                                   what="--- /dev/null\n+++ b/.envrc\n", why="w",
                                   reason=Reason.SENSITIVE_PATH.value, options=[o.value for o in OPTIONS],
                                   session_scope="exactly this edit in write_file")
    assert params.wire()["reason"] == "sensitive_path"


def test_a_workspace_config_cannot_shrink_the_list_even_when_trusted(tmp_path: Path) -> None:
    from lsp_agent.settings.config import inspect_workspace, load_settings
    from lsp_agent.settings.workspace_trust import trust

    (tmp_path / ".lsp-agent").mkdir()
    (tmp_path / ".lsp-agent" / "config.toml").write_text("[tools]\nsensitive_paths = []\n", encoding="utf-8")
    assert load_settings(tmp_path).tools.sensitive_paths == list(SENSITIVE_PATHS)  # untrusted: gated
    view = inspect_workspace(tmp_path)
    trust(view, view.hash)
    assert "tools.sensitive_paths" in inspect_workspace(tmp_path).refused
    assert load_settings(tmp_path).tools.sensitive_paths == list(SENSITIVE_PATHS)  # trusted: still refused
    # The user's own settings may change it (an editor option here, above the files).
    assert load_settings(tmp_path, {"tools": {"sensitive_paths": [".envrc"]}}).tools.sensitive_paths == [".envrc"]
