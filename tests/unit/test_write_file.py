"""write_file creates new files only, through the applier."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_agent.core.tools import FileTracker, ToolContext, ToolResult
from lsp_agent.disk.applier import DiskApplier
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.edits import ApplyResult, CreateFile, EditPlan
from lsp_agent.domain.history import ErrorKind
from lsp_agent.domain.ports import Document
from lsp_agent.settings.config import Settings
from lsp_agent.tools.write_file import WriteFile, WriteFileArgs


def make_ctx(root: Path, settings: Settings | None = None) -> ToolContext:
    return ToolContext(root=root, settings=settings or Settings(), documents=DiskDocuments(root),
                       applier=DiskApplier(root), files=FileTracker())


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return make_ctx(tmp_path)


async def write(ctx: ToolContext, path: str, content: str) -> ToolResult:
    return await WriteFile().run(WriteFileArgs(path=path, content=content), ctx)


async def test_creates_a_new_file_and_its_parent_directories(ctx: ToolContext) -> None:
    result = await write(ctx, "pkg/sub/mod.py", "x = 1\ny = 2\n")
    assert result.ok
    assert result.output == "OK: created pkg/sub/mod.py (2 lines, 12 bytes)"
    assert result.metadata == {"written": ["pkg/sub/mod.py"]}
    assert (ctx.root / "pkg/sub/mod.py").read_bytes() == b"x = 1\ny = 2\n"


async def test_content_is_written_byte_for_byte(ctx: ToolContext) -> None:
    assert (await write(ctx, "w.txt", "a\r\nb")).ok
    assert (ctx.root / "w.txt").read_bytes() == b"a\r\nb"


async def test_existing_file_is_refused_and_points_to_apply_patch(ctx: ToolContext) -> None:
    (ctx.root / "a.py").write_bytes(b"keep\n")
    result = await write(ctx, "a.py", "replace\n")
    assert not result.ok and result.error_kind is ErrorKind.TOOL_FAILURE
    assert result.output.startswith("ERROR: a.py already exists") and "apply_patch" in result.output
    assert (ctx.root / "a.py").read_bytes() == b"keep\n"


async def test_existing_directory_or_file_parent_is_refused(ctx: ToolContext) -> None:
    (ctx.root / "dir").mkdir()
    (ctx.root / "plain.txt").write_text("x")
    assert "already exists" in (await write(ctx, "dir", "x")).output
    blocked = await write(ctx, "plain.txt/child.txt", "x")
    assert not blocked.ok and "parent plain.txt is a file" in blocked.output


async def test_content_over_the_limit_is_refused(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, Settings.model_validate({"limits": {"write_bytes": 4}}))
    result = await write(ctx, "big.txt", "12345")
    assert not result.ok and "over the 4-byte limit" in result.output
    assert not (tmp_path / "big.txt").exists()


async def test_path_outside_the_root_is_denied(ctx: ToolContext) -> None:
    result = await write(ctx, "../escape.txt", "x")
    assert not result.ok and result.error_kind is ErrorKind.PATH_DENIED
    assert not (ctx.root.parent / "escape.txt").exists()


class OpenBuffer:
    async def read(self, path: str) -> Document | None:
        return Document(text="unsaved\n", version=1, source="buffer") if path == "draft.py" else None


class RecordingApplier:
    def __init__(self) -> None:
        self.plans: list[EditPlan] = []

    async def apply(self, plan: EditPlan) -> ApplyResult:
        self.plans.append(plan)
        return ApplyResult(ok=True)

    async def flush(self, paths: list[str]) -> ApplyResult:
        return ApplyResult(ok=True)


async def test_an_unsaved_editor_buffer_counts_as_existing(tmp_path: Path) -> None:
    applier = RecordingApplier()
    ctx = ToolContext(root=tmp_path, settings=Settings(), documents=OpenBuffer(), applier=applier,
                      files=FileTracker())
    assert "already exists" in (await write(ctx, "draft.py", "x\n")).output
    assert (await write(ctx, "./other/new.py", "y\n")).ok
    assert applier.plans == [EditPlan(ops=[CreateFile(path="other/new.py", text="y\n")])]


def test_schema_describes_both_arguments() -> None:
    schema = WriteFileArgs.model_json_schema()
    assert schema["required"] == ["path", "content"]
    assert all(prop.get("description") for prop in schema["properties"].values())
    assert "apply_patch" in WriteFile().description
