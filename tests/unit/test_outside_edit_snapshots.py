"""The re-check a headless run makes before declaring its verification (core/outside_edits.py)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from lsp_agent.core.outside_edits import CheckSnapshot


async def test_nothing_is_reported_before_a_check_was_taken(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    assert await CheckSnapshot(tmp_path, None).changed_outside() == []


async def test_a_file_rewritten_after_the_check_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("y = 1\n", encoding="utf-8")
    recheck = CheckSnapshot(tmp_path, None)
    await recheck.take()
    assert await recheck.changed_outside() == []
    (tmp_path / "a.py").write_text("x = 22\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("new\n", encoding="utf-8")
    assert await recheck.changed_outside() == ["a.py", "c.py"]


async def test_paths_git_ignores_and_bytecode_are_not_outside_edits(tmp_path: Path) -> None:
    async def ignored(root: Path, paths: list[str]) -> set[str]:
        return {p for p in paths if p.startswith("build/")}

    recheck = CheckSnapshot(tmp_path, ignored)
    await recheck.take()
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.txt").write_text("artifact\n", encoding="utf-8")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert await recheck.changed_outside() == []


async def test_a_fifo_planted_in_the_workspace_never_holds_the_recheck(tmp_path: Path) -> None:
    # The repository is untrusted: a FIFO where a source file was must not block the run's end.
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    recheck = CheckSnapshot(tmp_path, None)
    await recheck.take()
    (tmp_path / "a.py").unlink()
    os.mkfifo(tmp_path / "a.py")
    assert await asyncio.wait_for(recheck.changed_outside(), 30) == ["a.py"]
