"""Open buffers as the DocumentSource, and the applier's checks before anything reaches the editor."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.workspace import Workspace

from lsp_agent.domain.edits import ApplyFailure, EditPlan, Position, TextEdit, UpdateFile, digest
from lsp_agent.server.documents import BufferDocuments
from lsp_agent.server.edits import EditorCaps, LspApplier
from lsp_agent.server.watch import OwnWrites, file_digest

OLD = "x = 1\ny = 2\n"
NEW = "x = 1\ny = 3\n"
EDIT = TextEdit(start=Position(line=1, character=4), end=Position(line=1, character=5), new_text="3")


def open_buffer(root: Path, text: str, version: int) -> BufferDocuments:
    workspace = Workspace(root.as_uri())
    uri = (root / "a.py").as_uri()
    workspace.put_text_document(types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text))
    documents = BufferDocuments(workspace, root)
    documents.opened(uri)
    return documents


def applier(root: Path, documents: BufferDocuments, own: OwnWrites | None = None) -> LspApplier:
    caps = EditorCaps(apply_edit=True, document_changes=True)
    # The checks refuse before any request, so no connection is needed.
    return LspApplier(None, root, documents, own or OwnWrites(), caps)  # type: ignore[arg-type]


async def test_read_prefers_the_open_buffer_and_falls_back_to_disk(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("on disk\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("b on disk\n", encoding="utf-8")
    documents = open_buffer(tmp_path, "unsaved\n", 4)
    buffered = await documents.read("a.py")
    assert buffered is not None and (buffered.text, buffered.version, buffered.source) == ("unsaved\n", 4, "buffer")
    disk = await documents.read("b.py")
    assert disk is not None and (disk.text, disk.source) == ("b on disk\n", "disk")
    assert await documents.read("missing.py") is None


async def test_an_edit_planned_on_an_older_buffer_version_is_refused_unsent(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(OLD, encoding="utf-8")
    documents = open_buffer(tmp_path, OLD, 5)
    plan = EditPlan(ops=[UpdateFile(path="a.py", edits=[EDIT], base_text=OLD, base_version=4,
                                    new_text=NEW)])
    result = await applier(tmp_path, documents).apply(plan)
    assert (result.ok, result.failure) == (False, ApplyFailure.VERSION_MISMATCH)
    assert "version 5" in result.message


async def test_an_edit_planned_on_other_text_is_refused_unsent(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(OLD, encoding="utf-8")
    documents = open_buffer(tmp_path, "x = 1\ny = 2\n# typed since\n", 5)
    plan = EditPlan(ops=[UpdateFile(path="a.py", edits=[EDIT], base_text=OLD, new_text=NEW)])
    result = await applier(tmp_path, documents).apply(plan)
    assert (result.ok, result.failure) == (False, ApplyFailure.VERSION_MISMATCH)


async def test_edits_that_do_not_make_the_planned_text_are_refused_unsent(tmp_path: Path) -> None:
    """The planner does not re-check its edits; the applier does, before the editor sees them."""
    (tmp_path / "a.py").write_text(OLD, encoding="utf-8")
    documents = open_buffer(tmp_path, OLD, 5)
    plan = EditPlan(ops=[UpdateFile(path="a.py", edits=[EDIT], base_text=OLD, base_version=5,
                                    new_text="x = 1\ny = 4\n")])
    result = await applier(tmp_path, documents).apply(plan)
    assert (result.ok, result.failure) == (False, ApplyFailure.CONFLICT)
    assert "planned text" in result.message


async def test_closed_files_are_written_to_disk_and_recorded_as_own_writes(tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text(OLD, encoding="utf-8")
    own = OwnWrites()
    documents = open_buffer(tmp_path, "open\n", 1)
    plan = EditPlan(ops=[UpdateFile(path="c.py", edits=[EDIT], base_text=OLD, new_text=NEW)])
    result = await applier(tmp_path, documents, own).apply(plan)
    assert result.ok and (tmp_path / "c.py").read_text(encoding="utf-8") == NEW
    assert own.is_own("c.py", file_digest(tmp_path / "c.py"))
    assert not own.is_own("c.py", digest("someone else's text"))
