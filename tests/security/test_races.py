"""The disk writer against a racing attacker: a directory swapped for a symlink between the
check and the write, and a swap loop running while edits are applied, never lead a write (or a
temp file) out of the workspace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from lsp_agent.disk.applier import DiskApplier, _EditsCheck, _Entry
from lsp_agent.domain.edits import ApplyFailure, CreateFile, EditPlan, Position, TextEdit, UpdateFile
from tests.security.kit import tree_digest


def _update(path: str, old: str, new: str) -> UpdateFile:
    lines = old.count("\n")
    return UpdateFile(path=path, base_text=old, new_text=new,
                      edits=[TextEdit(start=Position(line=0, character=0), end=Position(line=lines, character=0),
                                      new_text=new)])


class _SwapAfterCheck(DiskApplier):
    """Swaps `dir` for a symlink to `outside` after every check passed and before the write."""

    def __init__(self, root: Path, directory: Path, outside: Path) -> None:
        super().__init__(root)
        self.directory, self.outside = directory, outside

    def _write(self, entries: dict[str, _Entry], check: _EditsCheck) -> None:
        shutil.rmtree(self.directory)
        os.symlink(self.outside, self.directory)
        super()._write(entries, check)


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.txt").write_text("old\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("old\n")  # the same name and content: a content check cannot tell
    return root, outside


async def test_toctou_directory_swapped_for_a_symlink_between_check_and_write(tmp_path: Path) -> None:
    root, outside = _setup(tmp_path)
    before = tree_digest(outside)
    applier = _SwapAfterCheck(root, root / "pkg", outside)
    for op in (_update("pkg/a.txt", "old\n", "new\n"), CreateFile(path="pkg/b.txt", text="x\n")):
        if (root / "pkg").is_symlink():
            (root / "pkg").unlink()
        (root / "pkg").mkdir(exist_ok=True)
        (root / "pkg" / "a.txt").write_text("old\n")
        result = await applier.apply(EditPlan(ops=[op]))
        assert not result.ok and result.failure is ApplyFailure.REFUSED, result
        assert "symbolic link" in (result.message or "")
    assert tree_digest(outside) == before  # no write, no temp file left outside


SWAPPER = """
import os, sys, time
root, outside = sys.argv[1], sys.argv[2]
pkg, parked, link = os.path.join(root, "pkg"), os.path.join(root, "pkg.dir"), os.path.join(root, "pkg.link")
while not os.path.exists(os.path.join(root, "stop")):
    try:
        os.symlink(outside, link)
        os.rename(pkg, parked)
        os.rename(link, pkg)  # pkg is now a link to the outside
        time.sleep(0.0002)
        os.rename(pkg, link)
        os.rename(parked, pkg)  # pkg is a directory again
        os.unlink(link)
        time.sleep(0.0002)
    except OSError:
        pass
"""


async def test_swap_loop_racing_the_writer_never_escapes(tmp_path: Path) -> None:
    root, outside = _setup(tmp_path)
    before = tree_digest(outside)
    # Another process (no shared interpreter lock): it really runs between our check and write.
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root), str(outside)])
    applier = DiskApplier(root)
    outcomes: list[bool] = []
    try:
        for n in range(400):
            result = await applier.apply(EditPlan(ops=[CreateFile(path=f"pkg/new{n}.txt", text="x\n")]))
            outcomes.append(result.ok)
    finally:
        (root / "stop").touch()
        swapper.wait(10)
    assert tree_digest(outside) == before, "a write or a temp file reached the outside directory"
    # Writes that went ahead landed inside the workspace (in pkg/, whatever its name was then).
    written = list(root.rglob("new*.txt"))
    assert len(written) == sum(outcomes) and 0 < sum(outcomes) < len(outcomes)
