"""An agent's edit an editor holds unsaved: recorded with the step (its text kept), its later save
is the agent's change — also after a restart and after retention folded the step — while a save of
other text is someone else's."""

from __future__ import annotations

from pathlib import Path

from lsp_agent.checkpoints.chain import fold
from lsp_agent.checkpoints.workspace import WorkspaceCheckpoints
from lsp_agent.core.checkpoint_port import StepRef
from lsp_agent.core.write_detect import snapshot
from lsp_agent.settings.config import Checkpoints

EDIT = StepRef("s", "m1", 1, "apply_patch")


async def edited_unsaved(tmp_path: Path) -> tuple[Path, WorkspaceCheckpoints]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("old\n")
    settings = Checkpoints()
    ws = WorkspaceCheckpoints(root, tmp_path / "state", lambda: settings)
    await ws.prepare()
    await ws.before(EDIT, ["a.txt"], None)
    await ws.after(EDIT, ["a.txt"], None, {"a.txt": "new\n"})  # in the buffer; the disk keeps "old"
    return root, ws


def reopened(ws: WorkspaceCheckpoints) -> WorkspaceCheckpoints:
    return WorkspaceCheckpoints(ws.root, ws.base, ws.settings)


async def next_step_outside(ws: WorkspaceCheckpoints, root: Path) -> list[str]:
    await ws.before(StepRef("s", "m2", 2, "run_command"), None, snapshot(root))
    return ws.records()[-1].outside


async def test_the_save_of_the_agents_text_is_its_own_even_after_a_restart(tmp_path: Path) -> None:
    root, ws = await edited_unsaved(tmp_path)
    (root / "a.txt").write_text("new\n")  # the editor saves the buffer
    assert await next_step_outside(reopened(ws), root) == []


async def test_a_save_of_other_text_is_outside_and_ends_the_expectation(tmp_path: Path) -> None:
    root, ws = await edited_unsaved(tmp_path)
    (root / "a.txt").write_text("new\nand mine\n")
    assert await next_step_outside(ws, root) == ["a.txt"]
    (root / "a.txt").write_text("new\n")  # seen with other text since: no longer the agent's edit
    assert await next_step_outside(ws, root) == ["a.txt"]


async def test_writing_a_file_again_with_the_same_content_is_no_outside_change(tmp_path: Path) -> None:
    root, ws = await edited_unsaved(tmp_path)
    (root / "a.txt").write_text("old\n")
    assert await next_step_outside(ws, root) == []


async def test_retention_folding_the_edit_keeps_what_it_left(tmp_path: Path) -> None:
    root, ws = await edited_unsaved(tmp_path)
    await ws.before(StepRef("s", "m2", 2, "run_command"), None, snapshot(root))
    folded = fold(ws.records(), 1, 1_000)  # only the newest of the session is kept
    assert [r.expected for r in folded if r.session == "s"] == [{"a.txt": ws.records()[2].expected["a.txt"]}]
    ws.chain.rewrite(folded)
    ws.blobs.sweep(ws.chain.digests())
    assert ws.blobs.get(folded[-1].expected["a.txt"]) == b"new\n"  # the buffer's text is still there
    (root / "a.txt").write_text("new\n")
    assert await next_step_outside(reopened(ws), root) == []
