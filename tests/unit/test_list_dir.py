from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lsp_agent.core.tools import FileTracker, ToolContext, ToolResult
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.edits import ApplyResult, EditPlan
from lsp_agent.domain.history import ErrorKind
from lsp_agent.settings.config import Settings
from lsp_agent.tools.list_dir import ListDir, ListDirArgs


class NoApplier:
    async def apply(self, plan: EditPlan) -> ApplyResult:
        return ApplyResult(ok=False, message="read-only test context")

    async def flush(self, paths: list[str]) -> ApplyResult:
        return ApplyResult(ok=True)


def make_ctx(root: Path, settings: Settings | None = None) -> ToolContext:
    return ToolContext(root=root, settings=settings or Settings(), documents=DiskDocuments(root),
                       applier=NoApplier(), files=FileTracker())


def touch(root: Path, *paths: str) -> None:
    for rel in paths:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x\n")


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


async def listing(ctx: ToolContext, path: str = ".", depth: int | None = None) -> ToolResult:
    return await ListDir().run(ListDirArgs(path=path, depth=depth), ctx)


async def test_default_depth_two_sorted_with_directory_slashes(ws: Path) -> None:
    touch(ws, "b.py", "a/x.py", "a/deep/y.py", "c/z.txt")
    result = await listing(make_ctx(ws))
    assert result.output.splitlines() == [
        "OK: ./ depth=2: 6 entries",
        "a/", "a/deep/", "a/x.py", "b.py", "c/", "c/z.txt",
    ]


async def test_depth_one_and_subdirectory(ws: Path) -> None:
    touch(ws, "a/x.py", "a/deep/y.py", "a/deep/more/z.py")
    shallow = await listing(make_ctx(ws), depth=1)
    assert shallow.output.splitlines()[1:] == ["a/"]
    sub = await listing(make_ctx(ws), "a", depth=3)
    assert sub.output.splitlines() == ["OK: a/ depth=3: 5 entries", "a/deep/", "a/deep/more/",
                                       "a/deep/more/z.py", "a/deep/y.py", "a/x.py"]


async def test_fixed_skip_list_outside_git(ws: Path) -> None:
    touch(ws, "src/m.py", "node_modules/p/i.js", ".git/HEAD", "src/__pycache__/m.pyc", "dist/out.js",
          ".venv/bin/python", "venv/x", ".mypy_cache/c", ".pytest_cache/c", ".ruff_cache/c", ".github/ci.yml")
    result = await listing(make_ctx(ws), depth=3)
    assert result.output.splitlines()[1:] == [".github/", ".github/ci.yml", "src/", "src/m.py"]


async def test_git_ignored_files_are_skipped_tracked_ones_kept(ws: Path) -> None:
    git(ws, "init", "-q")
    (ws / ".gitignore").write_text("build/\n*.log\nkept.log\n")
    touch(ws, "build/out.o", "app.log", "kept.log", "src/a.py", "src/debug.log", "new/n.py")
    git(ws, "add", "-f", "kept.log")  # tracked despite matching an ignore rule
    result = await listing(make_ctx(ws))
    assert result.output.splitlines()[1:] == [".gitignore", "kept.log", "new/", "new/n.py", "src/", "src/a.py"]


async def test_listing_an_ignored_directory_explicitly_shows_its_contents(ws: Path) -> None:
    git(ws, "init", "-q")
    (ws / ".gitignore").write_text("build/\n")
    touch(ws, "build/out.o")
    result = await listing(make_ctx(ws), "build")
    assert result.output.splitlines() == ["OK: build/ depth=2: 1 entries", "build/out.o"]


async def test_entry_cap_says_how_many_more(ws: Path) -> None:
    touch(ws, *(f"f{i:02}.txt" for i in range(12)))
    settings = Settings.model_validate({"limits": {"list_entries": 10}})
    result = await listing(make_ctx(ws, settings))
    lines = result.output.splitlines()
    assert lines[0] == "OK: ./ depth=2: 12 entries"
    assert lines[1:11] == [f"f{i:02}.txt" for i in range(10)]
    assert lines[11] == "[TRUNCATED] 2 more entries; list a subdirectory or use a smaller depth"
    assert result.metadata["truncated"] is True


async def test_exactly_the_cap_is_not_truncated(ws: Path) -> None:
    touch(ws, *(f"f{i:02}.txt" for i in range(10)))
    settings = Settings.model_validate({"limits": {"list_entries": 10}})
    result = await listing(make_ctx(ws, settings))
    assert "[TRUNCATED]" not in result.output and len(result.output.splitlines()) == 11


async def test_symlinks_are_shown_not_followed(tmp_path: Path, ws: Path) -> None:
    outside = tmp_path / "outside"
    touch(outside, "secret.txt")
    touch(ws, "real/a.py")
    os.symlink(outside, ws / "escape")
    os.symlink(ws / "real", ws / "inner")
    os.symlink("real/a.py", ws / "alias.py")
    os.symlink("nowhere.txt", ws / "broken")
    result = await listing(make_ctx(ws), depth=3)
    assert result.output.splitlines()[1:] == [
        "alias.py -> real/a.py", "broken -> nowhere.txt (missing)", "escape -> (outside workspace)",
        "inner -> real/", "real/", "real/a.py",
    ]
    assert "secret" not in result.output


async def test_errors_for_files_missing_paths_and_escapes(ws: Path) -> None:
    touch(ws, "a.py")
    ctx = make_ctx(ws)
    is_file = await listing(ctx, "a.py")
    missing = await listing(ctx, "nope")
    escape = await listing(ctx, "..")
    assert is_file.output.startswith("ERROR:") and "read_file" in is_file.output
    assert missing.output.startswith("ERROR: nope does not exist")
    assert escape.error_kind is ErrorKind.PATH_DENIED


async def test_empty_directory(ws: Path) -> None:
    (ws / "empty").mkdir()
    result = await listing(make_ctx(ws), "empty")
    assert result.ok and result.output.startswith("OK: empty/ has no entries")


def test_depth_bounds_are_in_the_schema() -> None:
    ListDirArgs.model_validate({"depth": 10})
    with pytest.raises(ValueError):
        ListDirArgs.model_validate({"depth": 11})
    with pytest.raises(ValueError):
        ListDirArgs.model_validate({"depth": 0})
