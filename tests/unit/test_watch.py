"""The workspace watcher tells the agent's own writes from outside ones, with real watchfiles events."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from watchfiles import Change

from lsp_agent.disk import applier as disk_applier
from lsp_agent.domain.edits import EditPlan, Position, TextEdit, UpdateFile
from lsp_agent.server.watch import OwnWrites, Watcher
from tests.helpers import wait_for
from tests.unit.test_protocol_buffers import applier, open_buffer

OLD = "x = 1\ny = 2\n"
NEW = "x = 1\ny = 3\n"
EDIT = TextEdit(start=Position(line=1, character=4), end=Position(line=1, character=5), new_text="3")


async def reported_until(seen: list[list[str]], path: str) -> list[str]:
    """Every path reported (but the probes of `watching`), once `path` has been. The watcher reports
    changes in the order they happened, so by then every earlier write has been judged too."""
    await wait_for(lambda: any(path in batch for batch in seen), timeout=30)
    return sorted(p for batch in seen for p in batch if not p.startswith("probe-"))


async def watching(root: Path, seen: list[list[str]], timeout: float = 30.0) -> None:
    """Wait until the watch is set up: write probe files (outside changes) until one is reported."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    n = 0
    while not any(p.startswith("probe-") for batch in seen for p in batch):
        if loop.time() > deadline:
            raise AssertionError("the watcher never reported a probe file")
        (root / f"probe-{n}.txt").write_text("probe\n", encoding="utf-8")
        n += 1
        for _ in range(20):  # a second for this probe, then another one
            if any(p.startswith("probe-") for batch in seen for p in batch):
                return
            await asyncio.sleep(0.05)


@pytest.mark.skipif(not disk_applier._UNNAMED, reason="needs files without a name (O_TMPFILE)")
async def test_the_appliers_unnamed_temp_file_is_not_an_outside_change(tmp_path: Path) -> None:
    # The kernel reports writes to a file that has no name yet as "#<inode>" in its directory.
    (tmp_path / "c.py").write_text(OLD, encoding="utf-8")
    own = OwnWrites()
    seen: list[list[str]] = []
    watcher = Watcher(tmp_path, own, seen.append)
    watcher.start()
    try:
        await watching(tmp_path, seen)
        plan = EditPlan(ops=[UpdateFile(path="c.py", edits=[EDIT], base_text=OLD, new_text=NEW)])
        result = await applier(tmp_path, open_buffer(tmp_path, "open\n", 1), own).apply(plan)
        assert result.ok
        (tmp_path / "by-hand.txt").write_text("outside\n", encoding="utf-8")
        assert await reported_until(seen, "by-hand.txt") == ["by-hand.txt"]
    finally:
        await watcher.stop()


async def test_a_path_absent_and_never_created_or_deleted_is_no_file_but_real_changes_count(
        tmp_path: Path) -> None:
    (tmp_path / "#5").write_text("a real file with such a name\n", encoding="utf-8")
    (tmp_path / "kept.txt").write_text("edited\n", encoding="utf-8")
    seen: list[list[str]] = []
    watcher = Watcher(tmp_path, OwnWrites(), seen.append)
    await watcher.handle({(Change.modified, str(tmp_path / "#2548385")),  # an unnamed file's writes
                          (Change.added, str(tmp_path / "made-and-gone.tmp")),
                          (Change.deleted, str(tmp_path / "made-and-gone.tmp"))})
    assert seen == []
    await watcher.handle({(Change.modified, str(tmp_path / "#5")), (Change.modified, str(tmp_path / "kept.txt")),
                          (Change.deleted, str(tmp_path / "removed.txt")),
                          (Change.modified, str(tmp_path / "edited-then-removed.txt")),
                          (Change.deleted, str(tmp_path / "edited-then-removed.txt"))})
    assert seen == [["#5", "edited-then-removed.txt", "kept.txt", "removed.txt"]]
