"""The ACP applier checks a plan against the client's text before it sends anything: the client gets
`new_text`, never the edits, so this check is what stands between a wrong plan and the user's buffer."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from lsp_agent.acp.fs import ClientApplier, ClientDocuments, ClientFs
from lsp_agent.domain.edits import ApplyFailure, EditPlan, Position, TextEdit, UpdateFile


@dataclass
class Buffers:
    """The client's side: its open buffers (what fs/read_text_file answers) and the writes it got."""

    texts: dict[str, str]
    writes: list[tuple[str, str]] = field(default_factory=list)

    async def read_text_file(self, session_id: str, path: str, line: int | None = None,
                             limit: int | None = None, **kwargs: Any) -> Any:
        return SimpleNamespace(content=self.texts[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        self.writes.append((path, content))
        self.texts[path] = content
        return None


def applier(root: Path, client: Buffers) -> ClientApplier:
    fs = ClientFs(client, root, can_read=True, can_write=True)
    fs.session_id = "s1"
    return ClientApplier(fs, ClientDocuments(fs))


def edit_first_char(base: str, to: str, new_text: str) -> EditPlan:
    edit = TextEdit(start=Position(line=0, character=0), end=Position(line=0, character=1), new_text=to)
    return EditPlan(ops=[UpdateFile(path="a.txt", edits=[edit], base_text=base, new_text=new_text)])


async def test_a_plan_whose_edits_make_its_text_is_sent(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("abc\n", encoding="utf-8")
    client = Buffers({str(tmp_path / "a.txt"): "xbc\n"})  # unsaved buffer: the client's text counts
    result = await applier(tmp_path, client).apply(edit_first_char("xbc\n", "X", "Xbc\n"))
    assert result.ok, result.message
    assert client.writes == [(str(tmp_path / "a.txt"), "Xbc\n")]


async def test_edits_that_do_not_make_the_planned_text_are_refused_and_nothing_is_sent(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("abc\n", encoding="utf-8")
    client = Buffers({str(tmp_path / "a.txt"): "abc\n"})
    result = await applier(tmp_path, client).apply(edit_first_char("abc\n", "A", "something else\n"))
    assert not result.ok and result.failure is ApplyFailure.CONFLICT
    assert "planned text" in (result.message or "")
    assert client.writes == []


async def test_edits_out_of_the_texts_range_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("abc\n", encoding="utf-8")
    client = Buffers({str(tmp_path / "a.txt"): "abc\n"})
    overlapping = [TextEdit(start=Position(line=0, character=0), end=Position(line=0, character=2), new_text=""),
                   TextEdit(start=Position(line=0, character=1), end=Position(line=0, character=3), new_text="")]
    plan = EditPlan(ops=[UpdateFile(path="a.txt", edits=overlapping, base_text="abc\n", new_text="\n")])
    result = await applier(tmp_path, client).apply(plan)
    assert not result.ok and result.failure is ApplyFailure.CONFLICT and "do not apply" in (result.message or "")
    assert client.writes == []


async def test_a_buffer_changed_since_planning_is_a_conflict(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("abc\n", encoding="utf-8")
    client = Buffers({str(tmp_path / "a.txt"): "abd\n"})
    result = await applier(tmp_path, client).apply(edit_first_char("abc\n", "A", "Abc\n"))
    assert not result.ok and result.failure is ApplyFailure.CONFLICT and "changed" in (result.message or "")
    assert client.writes == []
