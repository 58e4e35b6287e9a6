"""Protected paths: the model never plants `.git/` or `.lsp-agent/` (existing or not), and files other
programs run when the workspace is opened (`tools.sensitive_paths`) change only with the user's yes.

Each test is the attack through the real `lsp-agent run` loop, with a canary that the planted
configuration would write if anything ever ran it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.providers.loopback import LoopbackServer
from tests.security.conftest import needs_bwrap
from tests.security.identity import UNPRIVILEGED, scratch, skip_unless_possible
from tests.security.kit import Attack, run_attack


def cmd(command: str) -> tuple[str, dict[str, object]]:
    return ("run_command", {"command": command})


def py(code: str) -> tuple[str, dict[str, object]]:
    return cmd("python3 -c " + shlex.quote(code))


def entries(root: Path) -> list[str]:
    """Every path under root, directories included (an empty directory left behind shows)."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


# (the markers a command prints are split in its source: a result echoes the command line)
def plant(path: str, text: str) -> tuple[str, dict[str, object]]:
    """A command that creates `path` (and its directories) with `text`, printing what happened."""
    return py(f"import os; p = {path!r}; os.makedirs(os.path.dirname(p) or '.', exist_ok=True); "
              f"open(p, 'w').write({text!r}); print('PLAN' + 'TED', p)")


def user_git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git as the user (or an editor's git extension) runs it later: nothing neutralised."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60, env=env,
                          check=False)


@needs_bwrap
async def test_a_command_cannot_plant_harness_config_for_the_next_run(attack: Attack, server: LoopbackServer,
                                                                      tmp_path: Path) -> None:
    canary = tmp_path / "mcp-started"
    starter = f"import pathlib; pathlib.Path({str(canary)!r}).write_text('ran')"
    config = (f"[mcp.servers.evil]\ncommand = {json.dumps(sys.executable)}\n"
              f"args = {json.dumps(['-c', starter])}\n")
    before = entries(attack.workspace)
    await run_attack(attack, server, [
        plant(".lsp-agent/config.toml", config),
        py("import os; os.rmdir('.lsp-agent')"),  # the mount point is busy: no swap for a fresh one
        py("import os; os.rename('.lsp-agent', 'x')"),
    ])
    assert "Read-only file system" in attack.output(0) and "PLANTED" not in attack.output(0)
    assert "Device or resource busy" in attack.output(1) or "Read-only" in attack.output(1), attack.output(1)
    assert "Device or resource busy" in attack.output(2) or "Read-only" in attack.output(2), attack.output(2)
    assert entries(attack.workspace) == before, "the run left something behind"
    attack.assert_contained()
    # The next run in this workspace starts nothing the previous one wrote.
    server.requests.clear()
    await run_attack(attack, server, [])
    assert not canary.exists(), "a server planted by a command was started by the next run"


@needs_bwrap
async def test_a_command_cannot_build_a_git_repository_whose_filter_runs_later(
        attack: Attack, server: LoopbackServer, tmp_path: Path) -> None:
    canary = tmp_path / "filter-ran"
    (attack.workspace / "a.txt").write_text("a\n", encoding="utf-8")
    before = entries(attack.workspace)
    build = (
        "import os, subprocess\n"
        "open('.gitattributes', 'w').write('* filter=x\\n')\n"
        "subprocess.run(['git', 'init', '-q', '.'], check=True)\n"
        f"subprocess.run(['git', 'config', 'filter.x.clean', 'touch {canary}'], check=True)\n"
        "print('BU' + 'ILT')\n")
    await run_attack(attack, server, [
        py(build),
        plant(".git/config", f"[filter \"x\"]\n\tclean = touch {canary}\n"),
        ("verify_project", {}),  # the harness's own git status looks at the workspace
    ])
    assert "BUILT" not in attack.output(0) and "Read-only file system" in attack.output(0), attack.output(0)
    assert "Read-only file system" in attack.output(1)
    assert not (attack.workspace / ".git").exists(), "a .git was left in the workspace"
    # The user's own git (and an editor's) in the workspace later: no repository here, nothing runs.
    user_git(attack.workspace, "status")
    user_git(attack.workspace, "add", "-A")
    assert not canary.exists(), "a filter planted by a command ran"
    assert entries(attack.workspace) == sorted([*before, ".gitattributes"])
    attack.assert_contained()


@needs_bwrap
async def test_a_git_file_pointing_inside_the_workspace_protects_what_it_names(
        attack: Attack, server: LoopbackServer, tmp_path: Path) -> None:
    root = attack.workspace
    canary = tmp_path / "fsmonitor-ran"
    (root / "a.txt").write_text("a\n", encoding="utf-8")
    assert user_git(root, "init", "-q", "--separate-git-dir", "repo-data", ".").returncode == 0
    git_file = (root / ".git").read_text()
    config = (root / "repo-data" / "config").read_bytes()
    await run_attack(attack, server, [
        py(f"open('repo-data/config', 'a').write('[core]\\n\\tfsmonitor = touch {canary}\\n')"),
        plant("repo-data/hooks/post-checkout", f"touch {canary}\n"),
        plant(".git", "gitdir: elsewhere\n"),
    ])
    for out in attack.outputs():
        assert "Read-only file system" in out or "Device or resource busy" in out, out
    assert (root / ".git").read_text() == git_file and (root / "repo-data" / "config").read_bytes() == config
    user_git(root, "status")
    assert not canary.exists()
    attack.assert_contained()


@needs_bwrap
async def test_a_git_file_naming_a_missing_directory_leaves_nothing_to_fill(
        attack: Attack, server: LoopbackServer) -> None:
    (attack.workspace / ".git").write_text("gitdir: repo-data\n", encoding="utf-8")
    await run_attack(attack, server, [plant("repo-data/config", "[core]\n\tfsmonitor = touch pwned\n")])
    # Refused before it runs (git cannot read such a repository), or read-only if it runs.
    assert "PLANTED" not in attack.output(0), attack.output(0)
    assert (attack.workspace / ".git").read_text() == "gitdir: repo-data\n"
    assert not (attack.workspace / "repo-data").exists(), "the directory the .git file names was created"
    attack.assert_contained()


async def test_the_edit_tools_refuse_the_directory_a_git_file_names(attack: Attack, server: LoopbackServer) -> None:
    root = attack.workspace
    (root / ".git").write_text("gitdir: ./meta/repo\n", encoding="utf-8")
    (root / "meta" / "repo").mkdir(parents=True)
    (root / "meta" / "notes.txt").write_text("fine\n", encoding="utf-8")
    await run_attack(attack, server, [
        ("write_file", {"path": "meta/repo/config", "content": "[core]\n\tfsmonitor = touch CANARY\n"}),
        ("write_file", {"path": "meta/repo/hooks/post-checkout", "content": "touch CANARY\n"}),
        ("apply_patch", {"path": ".git", "old_text": "./meta/repo", "new_text": "elsewhere"}),
        ("write_file", {"path": "meta/ok.txt", "content": "ok\n"}),
    ])
    outs = attack.outputs()
    for out in outs[:3]:
        assert "path_denied" in out and "never writes" in out, out
    assert outs[3].startswith("OK: created meta/ok.txt")
    assert entries(root / "meta") == ["notes.txt", "ok.txt", "repo"]
    attack.assert_contained()


@needs_bwrap
@pytest.mark.parametrize("name", [".git", ".lsp-agent"])
async def test_a_symlinked_protected_dir_refuses_commands(attack: Attack, server: LoopbackServer, name: str) -> None:
    # A mount lands on a link's target: the link itself could be swapped for a directory of the command's.
    os.symlink(attack.outside, attack.workspace / name)
    swap = f"import os; os.unlink({name!r}); os.mkdir({name!r}); print('SWAP' + 'PED')"
    await run_attack(attack, server, [py(swap)])
    assert "SWAPPED" not in attack.output(0)
    assert f"{name} in the workspace is a symbolic link" in attack.output(0), attack.output(0)
    assert os.path.islink(attack.workspace / name)
    attack.assert_contained()


TASKS = json.dumps({"version": "2.0.0", "tasks": [{
    "label": "setup", "type": "shell", "command": "touch CANARY", "runOptions": {"runOn": "folderOpen"}}]})


@needs_bwrap
async def test_a_command_cannot_leave_a_folder_open_task_behind(attack: Attack, server: LoopbackServer) -> None:
    before = entries(attack.workspace)
    await run_attack(attack, server, [
        plant(".vscode/tasks.json", TASKS),
        plant(".envrc", "touch CANARY\n"),
        plant(".github/workflows/x.yml", "on: push\njobs: {a: {runs-on: x, steps: [{run: env}]}}\n"),
        plant("notes/ok.txt", "a file the model may create\n"),
    ])
    for n, path in enumerate([".vscode/tasks.json", ".envrc", ".github/workflows"]):
        out = attack.output(n)
        assert "removed after the command" in out and path in out, out
    assert "removed after" not in attack.output(3)
    assert entries(attack.workspace) == sorted([*before, "notes", "notes/ok.txt"]), entries(attack.workspace)
    attack.assert_contained()


@needs_bwrap
async def test_existing_sensitive_files_are_read_only_to_commands(attack: Attack, server: LoopbackServer) -> None:
    vscode = attack.workspace / ".vscode"
    vscode.mkdir()
    (vscode / "tasks.json").write_text("{}\n", encoding="utf-8")
    (vscode / "extensions.json").write_text("{}\n", encoding="utf-8")
    await run_attack(attack, server, [
        py(f"open('.vscode/tasks.json', 'w').write({TASKS!r})"),
        py("import os; os.unlink('.vscode/tasks.json')"),
        # Moving the directory aside and building a new one: the new file is found and removed.
        py("import os; os.rename('.vscode', 'old-vscode'); os.mkdir('.vscode'); "
           f"open('.vscode/tasks.json', 'w').write({TASKS!r}); print('REPL' + 'ACED')"),
        py("open('.vscode/extensions.json', 'w').write('{\"recommendations\": []}')"),  # not sensitive
    ])
    assert "Read-only file system" in attack.output(0)
    assert "Device or resource busy" in attack.output(1) or "Read-only" in attack.output(1), attack.output(1)
    assert "REPLACED" in attack.output(2) and "removed after the command: .vscode/tasks.json" in attack.output(2)
    assert not (vscode / "tasks.json").exists()
    assert (attack.workspace / "old-vscode" / "tasks.json").read_text() == "{}\n"  # moved, never lost
    attack.assert_contained()


async def test_edits_of_sensitive_paths_need_an_approval(attack: Attack, server: LoopbackServer) -> None:
    (attack.workspace / ".vscode").mkdir()
    (attack.workspace / ".vscode" / "settings.json").write_text("{}\n", encoding="utf-8")
    os.symlink(".envrc", attack.workspace / "env-link")
    before = entries(attack.workspace)
    hook = "*** Begin Patch\n*** Add File: .husky/pre-commit\n+touch CANARY\n*** End Patch\n"
    calls = [
        ("write_file", {"path": ".vscode/tasks.json", "content": TASKS}),
        ("apply_patch", {"path": ".vscode/settings.json", "old_text": "{}",
                         "new_text": '{"python.defaultInterpreterPath": "./evil"}'}),
        ("apply_patch", {"patch": hook}),
        ("write_file", {"path": ".VSCode/Launch.json", "content": "{}\n"}),
        ("write_file", {"path": "env-link", "content": "touch CANARY\n"}),
        ("write_file", {"path": ".git/config", "content": "[core]\n"}),  # no .git here: still refused
        ("write_file", {"path": ".lsp-agent/config.toml", "content": "[mcp.servers.x]\ncommand='x'\n"}),
        ("write_file", {"path": "fine.txt", "content": "ok\n"}),
    ]
    # Under `on-request` with no one to ask (no terminal): asked, denied. Under `never`: refused.
    for policy in ("on-request", "never"):
        server.requests.clear()
        await run_attack(attack, server, calls, "--approval", policy)
        outs = attack.outputs()
        for out in outs[:5]:
            assert "refused" in out and "tools.sensitive_paths" in out, out
            if policy == "never":
                assert "approvalPolicy is `never`" in out, out
        for out in outs[5:7]:
            assert "path_denied" in out and "never writes" in out, out
        assert outs[7].startswith("OK: created fine.txt")
        assert entries(attack.workspace) == sorted([*before, "fine.txt"])
        (attack.workspace / "fine.txt").unlink()
    assert (attack.workspace / ".vscode" / "settings.json").read_text() == "{}\n"
    attack.assert_contained()


@needs_bwrap
async def test_a_run_of_commands_leaves_no_trace_in_a_repository(attack: Attack, server: LoopbackServer) -> None:
    root = attack.workspace
    (root / "a.py").write_text("x = 1\n", encoding="utf-8")
    commit = ("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i")
    for args in (("init", "-q", "."), ("add", "-A"), commit):
        assert user_git(root, *args).returncode == 0
    before = entries(root)
    await run_attack(attack, server, [cmd("ls -a"), py("print(1)"), ("verify_project", {}), cmd("git status")])
    assert attack.output(0).startswith("OK: exit=0")
    assert user_git(root, "status", "--porcelain", "--ignored").stdout == ""
    assert entries(root) == before, "the run left an entry behind (an empty mount point?)"
    attack.assert_contained()


PLANT_AS_THE_SERVER = """
import asyncio, json, sys
from pathlib import Path
from lsp_agent.sandbox.policy import Sandbox
from lsp_agent.settings.config import Settings
from lsp_agent.tools.process import run_process

code = '''
import os
for p in ['.git/config', '.lsp-agent/config.toml', '.vscode/tasks.json']:
    try:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, 'w').write('x')
        print('made', p)
    except OSError as exc:
        print('refused', p, exc.strerror)
'''
root = Path(sys.argv[1])
outcome = asyncio.run(run_process(['python3', '-c', code], root, 60, sandbox=Sandbox.from_settings(Settings(), root)))
print(json.dumps({'output': outcome.output, 'removed': outcome.removed}))
"""


@needs_bwrap
def test_protected_directories_hold_when_the_server_is_unprivileged() -> None:
    """The same mount points made and removed by a server running as `nobody` (no root to lean on)."""
    skip_unless_possible(UNPRIVILEGED)
    with scratch() as base:
        workspace, home, state = base / "ws", base / "home", base / "state"
        for path in (workspace, home, state):
            path.mkdir()
        UNPRIVILEGED.own(workspace, home, state)
        env = {**UNPRIVILEGED.env(), "HOME": str(home), "LSP_AGENT_STATE_DIR": str(state)}
        done = subprocess.run([*UNPRIVILEGED.prefix(), UNPRIVILEGED.python(), "-c", PLANT_AS_THE_SERVER,
                               str(workspace)], env=env, cwd="/", capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout.splitlines()[-1])
        assert "refused .git/config Read-only file system" in result["output"], result
        assert "refused .lsp-agent/config.toml Read-only file system" in result["output"], result
        assert result["removed"] == [".vscode/tasks.json"]
        assert entries(workspace) == [], "the unprivileged server left something behind"


@needs_bwrap
async def test_a_timed_out_or_cancelled_command_gives_its_mount_points_back(tmp_path: Path) -> None:
    from lsp_agent.sandbox import mount_points
    from lsp_agent.sandbox.policy import Sandbox
    from lsp_agent.settings.config import Settings
    from lsp_agent.tools.process import releases_settled, run_process

    root = tmp_path / "ws"
    root.mkdir()
    sandbox = Sandbox.from_settings(Settings(), root)
    sleeper = ["python3", "-c", "import time; open('started', 'w').close(); time.sleep(600)"]
    timed_out = await run_process(sleeper, root, 2, sandbox=sandbox)
    assert timed_out.timed_out
    (root / "started").unlink(missing_ok=True)  # (on a loaded machine it may time out before starting)
    running = asyncio.ensure_future(run_process(sleeper, root, 600, sandbox=sandbox))
    async with asyncio.timeout(120):
        while not (root / "started").exists():
            await asyncio.sleep(0.05)  # waiting for the command to be running, not for a fixed time
    assert (root / ".lsp-agent").is_dir()  # its mount point, while it runs
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    await releases_settled()
    assert not mount_points.held().get(root / ".lsp-agent")
    assert entries(root) == ["started"]


@needs_bwrap
def test_a_command_prepared_while_another_holds_the_mount_point_keeps_it(tmp_path: Path) -> None:
    """The second command finds the first one's mount point existing: it must count itself in, or the
    first one's end removes the directory under it (and with it the read-only mount inside its
    sandbox, where `.lsp-agent/` could then be created)."""
    from lsp_agent.sandbox.policy import Sandbox
    from lsp_agent.settings.config import Settings

    root = tmp_path / "ws"
    root.mkdir()
    sandbox = Sandbox.from_settings(Settings(), root)
    first = sandbox.prepare(["true"], root)
    second = sandbox.prepare(["true"], root)
    first.finish()
    first.release()
    assert (root / ".lsp-agent").is_dir() and (root / ".git").is_dir()
    second.finish()
    second.release()
    assert entries(root) == []
