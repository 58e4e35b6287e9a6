from __future__ import annotations

from pathlib import Path

import pytest

from lsp_agent.core.tools import FileTracker, ToolContext, ToolResult
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.edits import ApplyResult, EditPlan
from lsp_agent.domain.history import ErrorKind
from lsp_agent.domain.ports import Document
from lsp_agent.settings.config import Settings
from lsp_agent.tools.read_file import ReadFile, ReadFileArgs, generated_source


class NoApplier:
    async def apply(self, plan: EditPlan) -> ApplyResult:
        return ApplyResult(ok=False, message="read-only test context")

    async def flush(self, paths: list[str]) -> ApplyResult:
        return ApplyResult(ok=True)


class BufferDocuments:
    """Open editor buffers over the disk: what the language server's DocumentSource does."""

    def __init__(self, root: Path, buffers: dict[str, str]) -> None:
        self.disk = DiskDocuments(root)
        self.buffers = buffers

    async def read(self, path: str) -> Document | None:
        if path in self.buffers:
            return Document(text=self.buffers[path], version=3, source="buffer")
        return await self.disk.read(path)


def make_ctx(root: Path, settings: Settings | None = None) -> ToolContext:
    return ToolContext(root=root, settings=settings or Settings(), documents=DiskDocuments(root),
                       applier=NoApplier(), files=FileTracker(), step=4)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return make_ctx(tmp_path)


def small_limits(read_lines: int) -> Settings:
    return Settings.model_validate({"limits": {"read_lines": read_lines}})


async def read(ctx: ToolContext, path: str, start: int | None = None, end: int | None = None) -> ToolResult:
    return await ReadFile().run(ReadFileArgs(path=path, start_line=start, end_line=end), ctx)


async def test_whole_file_is_numbered_and_recorded_as_read(ctx: ToolContext) -> None:
    (ctx.root / "a.py").write_text("x = 1\ny = 2\n")
    result = await read(ctx, "a.py")
    assert result.ok
    assert result.output == "OK: a.py lines 1-2 of 2\n     1\tx = 1\n     2\ty = 2"
    assert result.metadata["read"] == ["a.py"]
    assert result.metadata["lines"] == 2
    assert ctx.files.read_steps == {"a.py": 4}


async def test_range_is_inclusive_and_end_past_eof_is_clamped(ctx: ToolContext) -> None:
    (ctx.root / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await read(ctx, "a.txt", 3, 5)
    assert result.output.splitlines() == ["OK: a.txt lines 3-5 of 10", "     3\tline 3", "     4\tline 4",
                                          "     5\tline 5"]
    clamped = await read(ctx, "a.txt", 9, 50)
    assert clamped.output.splitlines()[0] == "OK: a.txt lines 9-10 of 10"
    assert "[TRUNCATED]" not in clamped.output


async def test_exactly_the_line_limit_is_not_truncated(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, small_limits(5))
    (tmp_path / "f.txt").write_text("".join(f"{i}\n" for i in range(1, 6)))
    result = await read(ctx, "f.txt")
    assert result.ok and "[TRUNCATED]" not in result.output
    assert result.output.splitlines()[-1] == "     5\t5"
    assert result.metadata["truncated"] is False


async def test_one_line_past_the_limit_is_truncated_with_continue_hint(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, small_limits(5))
    (tmp_path / "f.txt").write_text("".join(f"{i}\n" for i in range(1, 7)))
    result = await read(ctx, "f.txt")
    lines = result.output.splitlines()
    assert lines[0] == "OK: f.txt lines 1-5 of 6"
    assert lines[-1].startswith("[TRUNCATED]") and lines[-1].endswith("continue with start_line=6")
    assert ctx.files.read_steps == {"f.txt": 4}  # a partial read still counts as read
    rest = await read(ctx, "f.txt", 6)
    assert rest.output.splitlines() == ["OK: f.txt lines 6-6 of 6", "     6\t6"]


async def test_default_limit_is_the_contract_value(ctx: ToolContext) -> None:
    (ctx.root / "big.txt").write_text("x\n" * 801)
    result = await read(ctx, "big.txt")
    assert result.output.splitlines()[0] == "OK: big.txt lines 1-800 of 801"
    assert result.output.endswith("continue with start_line=801")


async def test_result_size_bound_cuts_by_characters_too(tmp_path: Path) -> None:
    settings = Settings.model_validate({"limits": {"result_chars": 2000}})
    ctx = make_ctx(tmp_path, settings)
    (tmp_path / "wide.txt").write_text(("y" * 150 + "\n") * 100)
    result = await read(ctx, "wide.txt")
    assert len(result.output) <= 2000
    last = result.output.splitlines()[-1]
    assert last.startswith("[TRUNCATED]") and "result size limit" in last
    end = result.metadata["end_line"]
    assert last.endswith(f"continue with start_line={end + 1}")


async def test_long_line_is_cut_and_says_so(ctx: ToolContext) -> None:
    (ctx.root / "min.js").write_text("a" * 5000 + "\nok\n")
    result = await read(ctx, "min.js")
    assert "line cut: 5000 characters in total" in result.output
    assert "[NOTE] 1 line(s) longer than" in result.output
    assert "     2\tok" in result.output


async def test_start_line_past_end_names_the_line_count(ctx: ToolContext) -> None:
    (ctx.root / "a.txt").write_text("1\n2\n3\n")
    result = await read(ctx, "a.txt", 4)
    assert not result.ok
    assert result.output.startswith("ERROR:") and "has 3 lines" in result.output


async def test_end_before_start_is_a_parameter_mismatch(ctx: ToolContext) -> None:
    (ctx.root / "a.txt").write_text("1\n2\n3\n")
    result = await read(ctx, "a.txt", 3, 2)
    assert result.error_kind is ErrorKind.PARAMETER_MISMATCH


def test_line_numbers_must_be_strict_positive_ints() -> None:
    with pytest.raises(ValueError):
        ReadFileArgs.model_validate({"path": "a", "start_line": 0})
    with pytest.raises(ValueError):
        ReadFileArgs.model_validate({"path": "a", "start_line": "3"})


async def test_missing_file_error_suggests_where_to_look(ctx: ToolContext) -> None:
    (ctx.root / "src").mkdir()
    (ctx.root / "src" / "utils.py").write_text("")
    result = await read(ctx, "src/util.py")
    assert result.output.startswith("ERROR: src/util.py does not exist")
    assert "src/utils.py" in result.output
    assert "list_dir" in result.output and "search_code" in result.output
    assert ctx.files.read_steps == {}


async def test_directory_points_to_list_dir(ctx: ToolContext) -> None:
    (ctx.root / "pkg").mkdir()
    result = await read(ctx, "pkg")
    assert result.output.startswith("ERROR:") and "list_dir" in result.output


async def test_binary_and_non_utf8_files_are_refused(ctx: ToolContext) -> None:
    (ctx.root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (ctx.root / "latin.txt").write_bytes(b"caf\xe9\n")
    png = await read(ctx, "img.png")
    latin = await read(ctx, "latin.txt")
    assert png.output.startswith("ERROR:") and "binary" in png.output
    assert latin.output.startswith("ERROR:") and "UTF-8" in latin.output
    assert ctx.files.read_steps == {}


async def test_open_buffer_wins_over_disk(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("saved = True\n")
    ctx = make_ctx(tmp_path)
    ctx.documents = BufferDocuments(tmp_path, {"a.py": "unsaved = True\nmore = 1\n"})
    result = await read(ctx, "a.py")
    assert result.output == "OK: a.py lines 1-2 of 2\n     1\tunsaved = True\n     2\tmore = 1"


async def test_unsaved_new_buffer_is_readable_before_it_exists_on_disk(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    ctx.documents = BufferDocuments(tmp_path, {"new.py": "draft\n"})
    result = await read(ctx, "new.py")
    assert result.ok and "     1\tdraft" in result.output


async def test_generated_file_points_to_its_source(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {"tools": {"generated_globs": ["gen/*_pb2.py=proto/api.proto", "build/** => make build"]}}
    )
    ctx = make_ctx(tmp_path, settings)
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "api_pb2.py").write_text("SECRET_GENERATED_CONTENT\n")
    result = await read(ctx, "gen/api_pb2.py")
    assert result.ok
    assert result.output == "OK: gen/api_pb2.py is generated; edit its source instead: proto/api.proto"
    assert "SECRET_GENERATED_CONTENT" not in result.output
    assert result.metadata["read"] == []


def test_generated_glob_formats() -> None:
    globs = ["*.gen.ts", "out/** => npm run build", "**/schema_pb2.py=schema.proto"]
    assert generated_source("a/b/x.gen.ts", globs) == (True, None)
    assert generated_source("out/x/y.js", globs) == (True, "npm run build")
    assert generated_source("schema_pb2.py", globs) == (True, "schema.proto")
    assert generated_source("src/main.ts", globs) == (False, None)


async def test_crlf_file_is_shown_without_carriage_returns(ctx: ToolContext) -> None:
    (ctx.root / "w.txt").write_bytes(b"a\r\nb\r\n")
    result = await read(ctx, "w.txt")
    assert result.output.splitlines() == ["OK: w.txt lines 1-2 of 2 (CRLF line endings, shown without the \\r)",
                                          "     1\ta", "     2\tb"]


async def test_empty_file_and_dotted_path(ctx: ToolContext) -> None:
    (ctx.root / "sub").mkdir()
    (ctx.root / "empty.txt").write_text("")
    result = await read(ctx, "sub/../empty.txt")
    assert result.output == "OK: empty.txt is empty (0 lines)"
    assert ctx.files.read_steps == {"empty.txt": 4}


async def test_escaping_path_is_denied_even_if_the_controller_missed_it(ctx: ToolContext) -> None:
    result = await read(ctx, "../outside.txt")
    assert result.error_kind is ErrorKind.PATH_DENIED
