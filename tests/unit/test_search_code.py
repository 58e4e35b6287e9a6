from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lsp_agent.core.tools import FileTracker, ToolContext, ToolResult
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.edits import ApplyResult, EditPlan
from lsp_agent.domain.history import ErrorKind
from lsp_agent.settings.config import Settings
from lsp_agent.tools.search_code import SearchCode, SearchCodeArgs, glob_matcher

needs_rg = pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")


class NoApplier:
    async def apply(self, plan: EditPlan) -> ApplyResult:
        return ApplyResult(ok=False, message="read-only test context")

    async def flush(self, paths: list[str]) -> ApplyResult:
        return ApplyResult(ok=True)


def make_ctx(root: Path, settings: Settings | None = None) -> ToolContext:
    return ToolContext(root=root, settings=settings or Settings(), documents=DiskDocuments(root),
                       applier=NoApplier(), files=FileTracker())


def write(root: Path, rel: str, data: str | bytes) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        target.write_bytes(data)
    else:
        target.write_text(data)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small git repository with everything the two engines must treat alike."""
    root = tmp_path_factory.mktemp("search") / "ws"
    outside = root.parent / "outside"
    write(outside, "leak.py", "def handler(): pass\n")
    write(root, ".gitignore", "build/\n*.log\n")
    write(root, "src/app.py", "import os\n\ndef handler(event):\n    return event  # handler\n")
    write(root, "src/pkg/util.py", "def helper():\n    '''handler helper'''\n")
    write(root, "src/pkg/data.json", '{"handler": 1}\n')
    write(root, "tests/test_app.py", "from src.app import handler\n\ndef test_handler():\n    handler(1)\n")
    write(root, "a.py", "handler = 'top level'\n")
    write(root, "a/b.py", "x = 'handler in a/'\n")
    write(root, "crlf.txt", b"handler one\r\nhandler two\r\n")
    write(root, "bom.py", b"\xef\xbb\xbfhandler_bom = 1\n")
    write(root, "latin.txt", b"handler caf\xe9\n")
    write(root, "wide.js", "var handler=" + "x" * 500 + ";\n")
    write(root, "bin.dat", b"handler\x00binary\n")
    write(root, ".github/ci.yml", "run: handler\n")
    write(root, "build/gen.py", "handler = 'ignored dir'\n")
    write(root, "debug.log", "handler ignored file\n")
    write(root, "node_modules/m/index.js", "handler\n")
    write(root, "dist/bundle.js", "handler\n")
    write(root, "src/__pycache__/app.py", "handler\n")
    write(root, "spaces in name.py", "  handler  \n")
    os.symlink(outside, root / "linked_outside")
    os.symlink("a.py", root / "alias.py")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


async def search(ctx: ToolContext, pattern: str, path: str | None = None, max_results: int | None = None,
                 *, use_ripgrep: bool = False) -> ToolResult:
    args = SearchCodeArgs(pattern=pattern, path=path, max_results=max_results)
    return await SearchCode(use_ripgrep=use_ripgrep).run(args, ctx)


async def test_python_engine_output(tree: Path) -> None:
    result = await search(make_ctx(tree), r"handler\b", "src/**/*.py")
    assert result.output.splitlines() == [
        "OK: 3 matches in 2 files",
        "src/app.py:3: def handler(event):",
        "src/app.py:4: return event  # handler",
        "src/pkg/util.py:2: '''handler helper'''",
    ]


async def test_python_engine_skips_ignored_binary_symlinked_and_skip_list(tree: Path) -> None:
    result = await search(make_ctx(tree), "handler")
    paths = set(result.metadata["files"])
    assert paths == {".github/ci.yml", "a.py", "a/b.py", "bom.py", "crlf.txt", "latin.txt", "src/app.py",
                     "src/pkg/data.json", "src/pkg/util.py", "spaces in name.py", "tests/test_app.py",
                     "wide.js"}
    assert "leak" not in result.output and "ignored" not in result.output


@needs_rg
@pytest.mark.parametrize(("pattern", "glob"), [
    ("handler", None),
    (r"def \w+\(", None),
    ("handler", "*.py"),
    ("handler", "src/**/*.py"),
    ("handler", "**/*.py"),
    ("handler", "src/*.py"),
    ("handler", "src"),
    ("handler", "a"),
    ("handler", "a.py"),
    ("handler", "{a,bom}.py"),
    ("handler", "{a,a/b}.py"),
    ("handler", "[ab]*.py"),
    ("handler", "?.py"),
    ("^handler", None),
    ("two$", None),
    (r"(?i)HANDLER_BOM", None),
    ("caf", None),
    (r"handler(?=\()", None),  # look-ahead: rg refuses it, the Python engine answers
    ("no such text anywhere", None),
])
async def test_ripgrep_and_python_engines_agree(tree: Path, pattern: str, glob: str | None) -> None:
    ctx = make_ctx(tree)
    with_rg = await search(ctx, pattern, glob, use_ripgrep=True)
    with_python = await search(ctx, pattern, glob, use_ripgrep=False)
    assert with_rg.output == with_python.output
    engine = with_rg.metadata.pop("engine")
    assert engine == ("python" if "(?=" in pattern else "ripgrep")
    assert with_python.metadata.pop("engine") == "python"
    assert with_rg.metadata == with_python.metadata


@needs_rg
async def test_engines_agree_on_truncation(tree: Path) -> None:
    ctx = make_ctx(tree)
    with_rg = await search(ctx, "handler", max_results=3, use_ripgrep=True)
    with_python = await search(ctx, "handler", max_results=3, use_ripgrep=False)
    assert with_rg.output == with_python.output
    assert with_rg.metadata["engine"] == "ripgrep"


async def test_sorting_is_by_path_components_then_line(tree: Path) -> None:
    result = await search(make_ctx(tree), "handler", "{a,a/b}.py")
    # 'a/b.py' sorts before 'a.py' component-wise ('a' < 'a.py'), as ripgrep's --sort path walks.
    assert [line.split(":")[0] for line in result.output.splitlines()[1:]] == ["a/b.py", "a.py"]


async def test_lines_are_stripped_and_cut(tree: Path) -> None:
    ctx = make_ctx(tree, Settings.model_validate({"limits": {"search_line_chars": 40}}))
    result = await search(ctx, "handler", "*.js")
    assert result.output.splitlines()[1] == "wide.js:1: var handler=" + "x" * 28 + " [... line cut]"
    spaced = await search(ctx, "handler", "spaces in name.py")
    assert spaced.output.splitlines()[1] == "spaces in name.py:1: handler"


async def test_max_results_truncates_and_says_so(tree: Path) -> None:
    result = await search(make_ctx(tree), "handler", "tests/*.py", max_results=2)
    lines = result.output.splitlines()
    assert lines[0] == "OK: 3 matches in 1 files"
    assert len(lines) == 4
    assert lines[3] == "[TRUNCATED] 1 more matches not shown; narrow the pattern or the path glob"
    exact = await search(make_ctx(tree), "handler", "tests/*.py", max_results=3)
    assert "[TRUNCATED]" not in exact.output


async def test_max_results_bounds(tree: Path) -> None:
    at_limit = await search(make_ctx(tree), "handler", max_results=100)
    over = await search(make_ctx(tree), "handler", max_results=101)
    assert at_limit.ok
    assert over.error_kind is ErrorKind.PARAMETER_MISMATCH


async def test_invalid_regex_is_a_parameter_mismatch(tree: Path) -> None:
    result = await search(make_ctx(tree), "handler(")
    assert result.error_kind is ErrorKind.PARAMETER_MISMATCH
    assert "missing )" in result.output


def test_empty_pattern_is_rejected_by_the_schema() -> None:
    with pytest.raises(ValueError):
        SearchCodeArgs.model_validate({"pattern": ""})


async def test_globs_leaving_the_workspace_are_refused(tree: Path) -> None:
    for glob in ("../**/*.py", "/etc/*", "!*.py"):
        result = await search(make_ctx(tree), "handler", glob)
        assert not result.ok, glob


async def test_no_matches_is_ok_with_a_hint(tree: Path) -> None:
    result = await search(make_ctx(tree), "zzz_not_there")
    assert result.ok and result.output.startswith("OK: 0 matches")


def test_glob_semantics_follow_ripgrep() -> None:
    assert glob_matcher("*.py")("src/deep/x.py")
    assert not glob_matcher("src/*.py")("src/deep/x.py")
    assert glob_matcher("src/**/*.py")("src/x.py")
    assert glob_matcher("src/**/*.py")("src/a/b/x.py")
    assert glob_matcher("**/test_*.py")("test_a.py")
    assert glob_matcher("/a.py")("a.py") and not glob_matcher("/a.py")("b/a.py")
    assert glob_matcher("{x,y}.ts")("lib/y.ts")
    assert glob_matcher("[!a]*.py")("b.py") and not glob_matcher("[!a]*.py")("a.py")
