"""The apply_patch tool end to end: real files in tmp_path, DiskDocuments and DiskApplier."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from pydantic import ValidationError

from lsp_agent.core.tools import FileTracker, ToolContext, ToolResult
from lsp_agent.disk.applier import DiskApplier
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.edits import ApplyResult, EditPlan, UpdateFile
from lsp_agent.domain.history import ErrorKind
from lsp_agent.domain.ports import Document
from lsp_agent.settings.config import Settings
from lsp_agent.tools import apply_patch as apply_patch_tool
from lsp_agent.tools import patch as planner
from lsp_agent.tools.apply_patch import ApplyPatch, ApplyPatchArgs


def make_ctx(root: Path, settings: Settings | None = None) -> ToolContext:
    return ToolContext(root=root, settings=settings or Settings(), documents=DiskDocuments(root),
                       applier=DiskApplier(root), files=FileTracker(), step=2)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return make_ctx(tmp_path)


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"


async def apply(ctx: ToolContext, text: str) -> ToolResult:
    return await ApplyPatch().run(ApplyPatchArgs(patch=text), ctx)


async def replace(ctx: ToolContext, path: str, old: str, new: str) -> ToolResult:
    return await ApplyPatch().run(ApplyPatchArgs(path=path, old_text=old, new_text=new), ctx)


def write(root: Path, rel: str, data: str | bytes) -> Path:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    target.write_bytes(data)
    return target


async def test_exact_replacement_edits_the_file_and_reports_what_was_written(ctx: ToolContext) -> None:
    write(ctx.root, "calc.py", "def add(a, b):\n    return a - b\n")
    result = await replace(ctx, "calc.py", "return a - b", "return a + b")
    assert result.ok, result.output
    assert (ctx.root / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert result.output == "OK: 1 file changed (+1 -1)\nM calc.py (+1 -1; line 2)"
    assert result.metadata == {"written": ["calc.py"], "edits": 1}


async def test_patch_tolerates_trailing_whitespace(ctx: ToolContext) -> None:
    write(ctx.root, "a.py", "x = 1    \ny = 2\n")
    result = await apply(ctx, patch("*** Update File: a.py", "@@", "-x = 1", "+x = 10", " y = 2"))
    assert result.ok, result.output
    assert (ctx.root / "a.py").read_text() == "x = 10\ny = 2\n"


async def test_patch_tolerates_wrong_indentation(ctx: ToolContext) -> None:
    write(ctx.root, "a.py", "def f():\n    if x:\n        return 1\n")
    result = await apply(ctx, patch("*** Update File: a.py", "@@", " if x:", "-    return 1", "+    return 2"))
    assert result.ok, result.output
    assert (ctx.root / "a.py").read_text() == "def f():\n    if x:\n        return 2\n"


async def test_patch_tolerates_unicode_punctuation(ctx: ToolContext) -> None:
    write(ctx.root, "doc.md", "Say \u201chi\u201d \u2013 it\u2019s polite.\n")
    result = await apply(ctx, patch("*** Update File: doc.md", "@@", "-Say \"hi\" - it's polite.",
                                    "+Say \"hello\"."))
    assert result.ok, result.output
    assert (ctx.root / "doc.md").read_text() == "Say \"hello\".\n"


async def test_two_matches_fail_with_the_count_and_leave_the_file_alone(ctx: ToolContext) -> None:
    original = "a = 1\nb = 2\na = 1\n"
    write(ctx.root, "a.py", original)
    result = await replace(ctx, "a.py", "a = 1", "a = 3")
    assert not result.ok and result.error_kind is ErrorKind.TOOL_FAILURE
    assert result.output.startswith("ERROR: old_text matches 2 places in a.py (line 1, line 3)")
    assert "Nothing was changed" in result.output
    assert (ctx.root / "a.py").read_text() == original
    assert ctx.files.failed_edits == {"a.py": 1}


async def test_zero_matches_point_at_the_near_miss_and_ask_for_a_reread(ctx: ToolContext) -> None:
    write(ctx.root, "a.py", "".join(f"# {i}\n" for i in range(20)) + "def total(items):\n    return sum(items)\n")
    result = await apply(ctx, patch("*** Update File: a.py", "@@", " def total(item):", "-    return sum(item)",
                                    "+    return sum(item) + 1"))
    assert not result.ok
    assert "not found in a.py" in result.output and "whitespace" in result.output
    assert "lines 21-22" in result.output and "    21 | def total(items):" in result.output
    assert "Re-read the file with read_file" in result.output


async def test_crlf_file_stays_crlf_on_disk(ctx: ToolContext) -> None:
    write(ctx.root, "win.txt", b"one\r\ntwo\r\nthree\r\n")
    result = await apply(ctx, patch("*** Update File: win.txt", "@@", " one", "-two", "+2", "+two and a half"))
    assert result.ok, result.output
    assert (ctx.root / "win.txt").read_bytes() == b"one\r\n2\r\ntwo and a half\r\nthree\r\n"
    replaced = await replace(ctx, "win.txt", "2\ntwo and a half\n", "TWO\n")
    assert replaced.ok, replaced.output
    assert (ctx.root / "win.txt").read_bytes() == b"one\r\nTWO\r\nthree\r\n"


async def test_missing_final_newline_survives_an_edit_elsewhere(ctx: ToolContext) -> None:
    write(ctx.root, "a.txt", b"a\nb\nc")
    result = await apply(ctx, patch("*** Update File: a.txt", "@@", "-a", "+A", " b"))
    assert result.ok, result.output
    assert (ctx.root / "a.txt").read_bytes() == b"A\nb\nc"


async def test_multi_file_patch_with_a_failing_second_file_changes_nothing(ctx: ToolContext) -> None:
    first = write(ctx.root, "one.py", b"x = 1\n")
    second = write(ctx.root, "two.py", b"y = 2\n")
    result = await apply(ctx, patch("*** Update File: one.py", "@@", "-x = 1", "+x = 100",
                                    "*** Update File: two.py", "@@", "-y = 3", "+y = 300",
                                    "*** Add File: three.py", "+z = 3"))
    assert not result.ok and "two.py" in result.output
    assert first.read_bytes() == b"x = 1\n" and second.read_bytes() == b"y = 2\n"
    assert not (ctx.root / "three.py").exists()
    assert ctx.files.failed_edits == {"two.py": 1}


async def test_multi_file_patch_adds_updates_moves_and_deletes(ctx: ToolContext) -> None:
    write(ctx.root, "src/old_name.py", "def f():\n    return 1\n")
    write(ctx.root, "src/gone.py", "x = 1\n")
    write(ctx.root, "src/keep.py", "a\nb\n")
    result = await apply(ctx, patch(
        "*** Add File: src/pkg/new.py", "+def g():", "+    return 2",
        "*** Update File: src/old_name.py", "*** Move to: src/new_name.py", "@@", " def f():", "-    return 1",
        "+    return 10",
        "*** Delete File: src/gone.py",
        "*** Update File: src/keep.py", "@@", " a", "-b", "+B",
    ))
    assert result.ok, result.output
    assert result.output.splitlines() == [
        "OK: 4 files changed (+4 -3)",
        "A src/pkg/new.py (+2)",
        "R src/old_name.py -> src/new_name.py (+1 -1; line 2)",
        "D src/gone.py (-1)",
        "M src/keep.py (+1 -1; line 2)",
    ]
    assert (ctx.root / "src/pkg/new.py").read_text() == "def g():\n    return 2\n"
    assert (ctx.root / "src/new_name.py").read_text() == "def f():\n    return 10\n"
    assert not (ctx.root / "src/old_name.py").exists() and not (ctx.root / "src/gone.py").exists()
    assert (ctx.root / "src/keep.py").read_text() == "a\nB\n"
    assert result.metadata["written"] == ["src/pkg/new.py", "src/old_name.py", "src/new_name.py", "src/gone.py",
                                          "src/keep.py"]
    assert result.metadata["edits"] == 2


async def test_a_file_the_patch_leaves_unchanged_is_listed_but_not_written(ctx: ToolContext) -> None:
    write(ctx.root, "a.py", b"a\n")
    write(ctx.root, "b.py", b"b\n")
    result = await apply(ctx, patch("*** Update File: a.py", "@@", "-a", "+a", "*** Update File: b.py", "@@", "-b",
                                    "+B"))
    assert result.ok, result.output
    assert result.output.splitlines() == ["OK: 1 file changed (+1 -1)", "M a.py (no change)", "M b.py (+1 -1; line 1)"]
    assert result.metadata["written"] == ["b.py"]


async def test_move_without_hunks_renames_the_file(ctx: ToolContext) -> None:
    write(ctx.root, "a.txt", b"same\n")
    result = await apply(ctx, patch("*** Update File: a.txt", "*** Move to: b/c.txt"))
    assert result.ok, result.output
    assert (ctx.root / "b/c.txt").read_bytes() == b"same\n" and not (ctx.root / "a.txt").exists()


async def test_add_of_an_existing_file_is_refused(ctx: ToolContext) -> None:
    write(ctx.root, "a.py", b"keep\n")
    result = await apply(ctx, patch("*** Add File: a.py", "+new"))
    assert not result.ok and "a.py already exists" in result.output and "*** Update File: a.py" in result.output
    assert (ctx.root / "a.py").read_bytes() == b"keep\n"
    assert ctx.files.failed_edits == {}  # not a matching failure


async def test_update_or_delete_of_a_missing_file_is_refused(ctx: ToolContext) -> None:
    updated = await apply(ctx, patch("*** Update File: nope.py", "@@", "-a", "+b"))
    deleted = await apply(ctx, patch("*** Delete File: nope.py"))
    assert "cannot update nope.py: it does not exist" in updated.output
    assert "cannot delete nope.py: it does not exist" in deleted.output
    replaced = await replace(ctx, "nope.py", "a", "b")
    assert "write_file" in replaced.output


async def test_three_failed_edits_require_a_reread_which_clears_it(ctx: ToolContext) -> None:
    write(ctx.root, "a.py", "x = 1\n")
    outputs = [(await replace(ctx, "a.py", f"x = {n}", "x = 9")).output for n in (5, 6, 7)]
    assert "read it again with read_file" not in outputs[1]
    assert "This was failed edit 3 of a.py" in outputs[2]
    assert "a.py" in ctx.files.reread_required
    refused = await replace(ctx, "a.py", "x = 1", "x = 2")
    assert not refused.ok and "Call read_file on a.py" in refused.output
    assert (ctx.root / "a.py").read_text() == "x = 1\n"
    ctx.files.note_read("a.py", step=5)
    accepted = await replace(ctx, "a.py", "x = 1", "x = 2")
    assert accepted.ok and (ctx.root / "a.py").read_text() == "x = 2\n"


async def test_success_resets_the_failure_count(ctx: ToolContext) -> None:
    write(ctx.root, "a.py", "x = 1\n")
    await replace(ctx, "a.py", "x = 5", "x = 9")
    assert (await replace(ctx, "a.py", "x = 1", "x = 2")).ok
    assert ctx.files.failed_edits == {}


class StaleDocuments:
    """What an editor shows: the text as last read, though the disk has changed since."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts

    async def read(self, path: str) -> Document | None:
        return Document(text=self.texts[path]) if path in self.texts else None


async def test_disk_changed_since_reading_is_a_conflict_that_asks_for_a_reread(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    ctx.documents = StaleDocuments({"a.py": "x = 1\n"})
    target = write(tmp_path, "a.py", b"x = 1\ny = 2\n")
    result = await replace(ctx, "a.py", "x = 1", "x = 2")
    assert not result.ok and "not applied (conflict)" in result.output and "changed on disk" in result.output
    assert "Re-read a.py with read_file" in result.output
    assert target.read_bytes() == b"x = 1\ny = 2\n"
    assert "a.py" in ctx.files.reread_required


class RecordingApplier:
    def __init__(self) -> None:
        self.plans: list[EditPlan] = []

    async def apply(self, plan: EditPlan) -> ApplyResult:
        self.plans.append(plan)
        return ApplyResult(ok=True)

    async def flush(self, paths: list[str]) -> ApplyResult:
        return ApplyResult(ok=True)


class BufferDocuments:
    async def read(self, path: str) -> Document | None:
        return Document(text="unsaved = 1\n", version=12, source="buffer") if path == "open.py" else None


async def test_open_buffer_text_and_version_go_into_the_plan(tmp_path: Path) -> None:
    applier = RecordingApplier()
    ctx = ToolContext(root=tmp_path, settings=Settings(), documents=BufferDocuments(), applier=applier,
                      files=FileTracker())
    result = await replace(ctx, "open.py", "unsaved = 1", "unsaved = 2")
    assert result.ok, result.output
    (update,) = applier.plans[0].ops
    assert isinstance(update, UpdateFile)
    assert update.base_version == 12 and update.new_text == "unsaved = 2\n"


async def test_new_content_over_the_write_limit_is_refused(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, Settings.model_validate({"limits": {"write_bytes": 10}}))
    write(tmp_path, "a.txt", b"short\n")
    result = await replace(ctx, "a.txt", "short", "much longer text")
    assert not result.ok and "over the 10-byte limit of one edit" in result.output
    assert (tmp_path / "a.txt").read_bytes() == b"short\n"


async def test_the_write_limit_judges_the_edit_not_the_file(tmp_path: Path) -> None:
    """A 3-line edit to a 2.4 MB file: the edit is small, the file is under the 8 MB default."""
    ctx = make_ctx(tmp_path)
    assert ctx.settings.limits.write_bytes < 2_400_000 < ctx.settings.limits.file_bytes
    body = "".join(f"line_{i} = {i}\n" for i in range(150_000))
    write(tmp_path, "big.py", body)
    assert len(body) > 2_400_000
    old = "line_149990 = 149990\nline_149991 = 149991\nline_149992 = 149992\n"
    result = await replace(ctx, "big.py", old, old.replace("= 1", "= -1"))
    assert result.ok, result.output
    assert "line_149991 = -149991\n" in (tmp_path / "big.py").read_text()


@pytest.mark.parametrize("form", ["replacement", "patch"])
async def test_the_file_size_limit_is_a_setting_checked_at_its_boundary(tmp_path: Path, form: str) -> None:
    ctx = make_ctx(tmp_path, Settings.model_validate({"limits": {"file_bytes": 20}}))
    write(tmp_path, "a.txt", b"0123456789\nabcdefgh\n")  # 20 bytes: at the limit

    async def edit(old: str, new: str) -> ToolResult:
        if form == "replacement":
            return await replace(ctx, "a.txt", old, new)
        return await apply(ctx, patch("*** Update File: a.txt", "@@", f"-{old}", f"+{new}"))

    result = await edit("abcdefgh", "ABCDEFGH")  # stays at 20 bytes
    assert result.ok, result.output
    result = await edit("ABCDEFGH", "ABCDEFGHI")  # would be 21 bytes
    assert not result.ok and "would be 21 bytes, over the 20-byte limit" in result.output
    assert "limits.file_bytes" in result.output
    assert (tmp_path / "a.txt").read_bytes() == b"0123456789\nABCDEFGH\n"
    write(tmp_path, "a.txt", b"0123456789\nABCDEFGHI\n")  # 21 bytes: one past the limit
    result = await edit("ABCDEFGHI", "x")
    assert not result.ok and "a.txt is 21 bytes, over the 20-byte limit" in result.output
    assert (tmp_path / "a.txt").read_bytes() == b"0123456789\nABCDEFGHI\n"


async def test_unparsable_patch_names_the_line_and_changes_nothing(ctx: ToolContext) -> None:
    write(ctx.root, "a.py", b"x\n")
    result = await apply(ctx, patch("*** Update File: a.py", "@@", "-x", "y"))
    assert not result.ok and result.error_kind is ErrorKind.PARAMETER_MISMATCH
    assert result.output.startswith("ERROR: the patch does not parse: line 5: expected a hunk line")
    assert "*** Begin Patch" in result.output  # shows the grammar
    assert (ctx.root / "a.py").read_bytes() == b"x\n"


def test_paths_include_move_targets_and_are_empty_for_a_bad_patch() -> None:
    tool = ApplyPatch()
    good = ApplyPatchArgs(patch=patch("*** Update File: a.py", "*** Move to: ../b.py", "@@", "-x", "+y",
                                      "*** Add File: c.py", "+c"))
    assert list(tool.paths(good)) == ["a.py", "../b.py", "c.py"]
    assert list(tool.paths(ApplyPatchArgs(patch="nonsense"))) == []
    assert list(tool.paths(ApplyPatchArgs(path="d.py", old_text="a", new_text="b"))) == ["d.py"]


@pytest.mark.parametrize("arguments", [
    {},
    {"patch": patch("*** Delete File: a"), "path": "a"},
    {"path": "a", "old_text": "x"},
])
def test_exactly_one_argument_form_is_accepted(arguments: dict[str, str]) -> None:
    with pytest.raises(ValidationError) as info:
        ApplyPatchArgs.model_validate(arguments)
    assert "give either `patch`" in str(info.value) and "`old_text`" in str(info.value)


def test_description_and_schema_say_how_to_use_both_forms() -> None:
    tool = ApplyPatch()
    assert "Use when:" in tool.description and "write_file" in tool.description
    schema = ApplyPatchArgs.model_json_schema()
    assert set(schema["properties"]) == {"patch", "path", "old_text", "new_text"}
    assert all(prop.get("description") for prop in schema["properties"].values())


@pytest.mark.parametrize("form", ["replacement", "patch"])
async def test_large_files_are_planned_off_the_event_loop_small_ones_inline(
        ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    """Planning is linear in the text: a plan over more than PLAN_INLINE_BYTES runs in a worker thread,
    so the event loop (in the server, every editor request) is not held up for it."""
    threads: list[bool] = []
    for name in ("plan_replacement", "plan_patch"):
        real = getattr(planner, name)

        def spy(*args: object, real: object = real) -> object:
            threads.append(threading.current_thread() is threading.main_thread())
            return real(*args)  # type: ignore[operator]

        monkeypatch.setattr(planner, name, spy)
    write(ctx.root, "small.py", "a = 1\n")
    write(ctx.root, "large.py", "b = 1\n" + "pass\n" * 40)
    monkeypatch.setattr(apply_patch_tool, "PLAN_INLINE_BYTES", 100)
    for path, old in (("small.py", "a = 1"), ("large.py", "b = 1")):
        if form == "replacement":
            result = await replace(ctx, path, old, "x = 2")
        else:
            result = await apply(ctx, patch(f"*** Update File: {path}", "@@", f"-{old}", "+x = 2"))
        assert result.ok, result.output
        assert (ctx.root / path).read_text().startswith("x = 2\n")
    assert threads == [True, False]  # small: on the loop's thread; large: in a worker
