"""A restore killed with SIGKILL at several points leaves each file old or new, never mixed, and
the next start finishes it from its journal."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lsp_agent.checkpoints.rewind import rewind
from lsp_agent.checkpoints.workspace import WorkspaceCheckpoints
from lsp_agent.core.checkpoint_port import StepRef
from lsp_agent.core.write_detect import snapshot
from lsp_agent.settings.config import Checkpoints
from tests.helpers import wait_for

FILES = 40
SIZE = 256 * 1024


def content(name: int, version: str) -> bytes:
    line = f"{version} file {name}\n".encode()
    return line * (SIZE // len(line))


def make_history(root: Path, state: Path) -> None:
    """Checkpoint ckpt-1: the old files; then every file rewritten, one deleted, one created."""
    root.mkdir()
    for n in range(FILES):
        (root / f"f{n:02}.txt").write_bytes(content(n, "old"))
    checkpoints = WorkspaceCheckpoints(root, state, Checkpoints)

    async def steps() -> None:
        ref = StepRef("s", "m1", 1, "run_command")
        await checkpoints.before(ref, None, snapshot(root))
        for n in range(FILES):
            (root / f"f{n:02}.txt").write_bytes(content(n, "new"))
        (root / "f00.txt").unlink()
        (root / "created.txt").write_bytes(b"created\n")
        await checkpoints.after(ref, None, snapshot(root))

    asyncio.run(steps())


RESTORER = textwrap.dedent("""
    import asyncio, os, sys, time
    from pathlib import Path
    from lsp_agent.checkpoints.rewind import rewind
    from lsp_agent.checkpoints.workspace import WorkspaceCheckpoints
    from lsp_agent.settings.config import Checkpoints
    root, state, stop_at = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    def on_op(index):
        if index == stop_at:
            Path(sys.argv[4]).write_text("paused")
            time.sleep(600)
    ws = WorkspaceCheckpoints(root, state, Checkpoints)
    asyncio.run(rewind(ws, "s", "ckpt-1", [], dry_run=False, confirm=True, on_op=on_op))
""")


def assert_each_file_old_or_new(root: Path) -> None:
    for n in range(FILES):
        path = root / f"f{n:02}.txt"
        if path.exists():
            assert path.read_bytes() in (content(n, "old"), content(n, "new")), f"{path.name} is mixed"
    leftovers = [p.name for p in root.iterdir() if p.name.endswith(".lsp-agent-restore")]
    assert len(leftovers) <= 1  # at most the one being written when killed, never renamed into place


@pytest.mark.parametrize("stop_at", [0, 17, FILES])
def test_kill_9_mid_restore_then_the_next_start_finishes_it(tmp_path: Path, stop_at: int) -> None:
    root, state, marker = tmp_path / "ws", tmp_path / "state", tmp_path / "paused"
    make_history(root, state)
    child = subprocess.Popen([sys.executable, "-c", RESTORER, str(root), str(state), str(stop_at), str(marker)],
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        asyncio.run(wait_for(marker.exists, timeout=60))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    assert (state / "restore.journal").exists()
    assert_each_file_old_or_new(root)
    reopened = WorkspaceCheckpoints(root, state, Checkpoints)  # the next start
    assert reopened.recovered and not (state / "restore.journal").exists()
    for n in range(FILES):
        assert (root / f"f{n:02}.txt").read_bytes() == content(n, "old")
    assert not (root / "created.txt").exists()
    assert not [p for p in root.iterdir() if p.name.endswith(".lsp-agent-restore")]


def test_kill_9_at_an_arbitrary_moment_leaves_no_mixed_file(tmp_path: Path) -> None:
    """Without a pause: killed as soon as the journal exists, wherever the restore then is."""
    root, state = tmp_path / "ws", tmp_path / "state"
    make_history(root, state)
    child = subprocess.Popen([sys.executable, "-c", RESTORER, str(root), str(state), "-1", "unused"],
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    journal = state / "restore.journal"
    try:
        asyncio.run(wait_for(lambda: journal.exists() or child.poll() is not None, timeout=60))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    assert_each_file_old_or_new(root)
    WorkspaceCheckpoints(root, state, Checkpoints)
    assert all((root / f"f{n:02}.txt").read_bytes() == content(n, "old") for n in range(FILES))


def test_a_finished_restore_leaves_no_journal(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    make_history(root, state)
    ws = WorkspaceCheckpoints(root, state, Checkpoints)
    outcome = asyncio.run(rewind(ws, "s", "ckpt-1", [], dry_run=False, confirm=True))
    assert len(outcome.restored) == FILES + 1 and not (state / "restore.journal").exists()


def test_a_restored_file_is_replaced_whole_never_rewritten_in_place(tmp_path: Path) -> None:
    """A reader holding the current file keeps reading it whole: the restored content is a new file
    renamed over the name (what makes a kill mid-write leave the old file intact)."""
    root, state = tmp_path / "ws", tmp_path / "state"
    make_history(root, state)
    with open(root / "f05.txt", "rb") as held:
        ws = WorkspaceCheckpoints(root, state, Checkpoints)
        asyncio.run(rewind(ws, "s", "ckpt-1", [], dry_run=False, confirm=True))
        assert held.read() == content(5, "new")
    assert (root / "f05.txt").read_bytes() == content(5, "old")
