"""The checkpoint store treats the workspace as hostile: links are recorded, never followed; special
files are never opened; a restore never writes through a directory swapped for a link; and nothing of
the workspace's git configuration (filters, hooks, fsmonitor) runs."""

from __future__ import annotations

import asyncio
import os
import zlib
from pathlib import Path

from lsp_agent.checkpoints.rewind import rewind
from lsp_agent.checkpoints.workspace import WorkspaceCheckpoints
from lsp_agent.core.checkpoint_port import StepRef
from lsp_agent.core.write_detect import snapshot
from lsp_agent.settings.config import Checkpoints
from lsp_agent.tools.list_dir import git_ignored_paths
from tests.helpers import git_repo

SECRET = "canary-checkpoint-secret-5d1e"
STEP = StepRef("s", "m1", 1, "run_command")


def stored_bytes(state: Path) -> bytes:
    return b"".join(zlib.decompress(p.read_bytes()) for p in (state / "objects").rglob("*") if p.is_file())


async def command_step(ws: WorkspaceCheckpoints, root: Path, effect: object) -> None:
    await ws.before(STEP, None, snapshot(root))
    effect()  # type: ignore[operator]
    await ws.after(STEP, None, snapshot(root))


async def test_a_symlink_is_recorded_as_a_link_and_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    os.symlink(outside / "secret.txt", root / "link")
    ws = WorkspaceCheckpoints(root, tmp_path / "state", Checkpoints)
    await command_step(ws, root, lambda: (root / "link").unlink())
    assert SECRET.encode() not in stored_bytes(tmp_path / "state")
    await rewind(ws, "s", "ckpt-1", [], dry_run=False, confirm=False)
    assert (root / "link").is_symlink() and os.readlink(root / "link") == str(outside / "secret.txt")
    assert (outside / "secret.txt").read_text() == SECRET


async def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    ws = WorkspaceCheckpoints(root, tmp_path / "state", Checkpoints)
    await ws.before(STEP, ["a.txt"], None)

    def fifo() -> None:
        os.mkfifo(root / "pipe")
    # declared by an edit and seen by a command's walk: either way the checkpoint does not block
    await asyncio.wait_for(command_step(ws, root, fifo), timeout=60)
    await asyncio.wait_for(ws.before(StepRef("s", "m2", 2, "write_file"), ["pipe"], None), timeout=60)
    assert "pipe" not in ws.tree


async def test_a_restore_never_writes_through_a_directory_swapped_for_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text(SECRET)
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_text("inside\n")
    ws = WorkspaceCheckpoints(root, tmp_path / "state", Checkpoints)

    def swap() -> None:
        (root / "d" / "f.txt").unlink()
        (root / "d").rmdir()
        os.symlink(outside, root / "d")
    await command_step(ws, root, swap)
    outcome = await rewind(ws, "s", "ckpt-1", [], dry_run=False, confirm=True)
    assert (outside / "f.txt").read_text() == SECRET and sorted(os.listdir(outside)) == ["f.txt"]
    assert "d/f.txt" in outcome.failed and "symlink" in outcome.failed["d/f.txt"]


async def test_the_workspaces_git_filters_hooks_and_fsmonitor_never_run(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "ws", {"a.txt": "a\n", ".gitignore": "out/\n"})
    canary = tmp_path / "ran"
    script = f"sh -c 'echo ran >> {canary}; cat'"
    (root / ".gitattributes").write_text("* filter=evil\n")
    with open(root / ".git" / "config", "a") as config:
        config.write(f'[filter "evil"]\n\tclean = {script}\n\tsmudge = {script}\n\trequired = true\n'
                     f'[core]\n\tfsmonitor = {script}\n\thooksPath = {tmp_path}\n')
    ws = WorkspaceCheckpoints(root, tmp_path / "state", Checkpoints, git_ignored_paths)

    def change() -> None:
        (root / "a.txt").write_text("changed\n")
        (root / "out").mkdir()
        (root / "out" / "x").write_text("x\n")
    await command_step(ws, root, change)
    await rewind(ws, "s", "ckpt-1", [], dry_run=False, confirm=True)
    assert (root / "a.txt").read_text() == "a\n" and (root / "out" / "x").exists()
    assert not canary.exists()
