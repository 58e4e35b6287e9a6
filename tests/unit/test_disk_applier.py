"""DiskApplier: every precondition checked before the first write, atomic files, rollback."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_agent.disk.applier import DiskApplier
from lsp_agent.domain.edits import (
    ApplyFailure,
    CreateFile,
    DeleteFile,
    EditPlan,
    FileOp,
    Position,
    RenameFile,
    TextEdit,
    UpdateFile,
)
from lsp_agent.domain.ports import Document
from lsp_agent.tools.patch import plan_patch
from lsp_agent.tools.patch_grammar import parse_patch


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


def put(root: Path, rel: str, data: bytes) -> Path:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def unchanged(root_fd: int, parts: tuple[str, ...], original: bytes | str | None) -> bool:
    """The applier's recheck of a file, its descriptor closed again."""
    from lsp_agent.disk import applier as disk_applier

    still, fd = disk_applier._open_unchanged(root_fd, parts, original)
    if fd is not None:
        os.close(fd)
    return still


def update(path: str, base: str, new: str) -> UpdateFile:
    """A whole-line update computed the way apply_patch does it."""
    outcome = plan_patch(parse_patch(f"*** Begin Patch\n*** Update File: {path}\n@@\n"
                                     + "".join(f"-{line}\n" for line in base.splitlines())
                                     + "".join(f"+{line}\n" for line in new.splitlines())
                                     + "*** End Patch\n"), {path: Document(text=base)})
    op = outcome.plan.ops[0]  # type: ignore[union-attr]
    assert isinstance(op, UpdateFile)
    return op


async def run(root: Path, *ops: FileOp) -> tuple[bool, ApplyFailure | None, str]:
    result = await DiskApplier(root).apply(EditPlan(ops=list(ops)))
    return result.ok, result.failure, result.message


async def test_update_applies_the_text_edits_and_keeps_the_file_mode(root: Path) -> None:
    target = put(root, "run.sh", b"echo one\necho two\n")
    target.chmod(0o754)
    ok, _, _ = await run(root, update("run.sh", "echo one\necho two\n", "echo one\necho 2\n"))
    assert ok
    assert target.read_bytes() == b"echo one\necho 2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o754
    assert snapshot(root) == {"run.sh": b"echo one\necho 2\n"}  # no temp files left behind


async def test_create_delete_and_rename(root: Path) -> None:
    put(root, "old.txt", b"old\n")
    put(root, "moving.txt", b"moving\n")
    ok, _, message = await run(root, CreateFile(path="new/dir/a.txt", text="a\n"),
                               DeleteFile(path="old.txt", base_text="old\n"),
                               RenameFile(path="moving.txt", new_path="moved/here.txt"))
    assert ok, message
    assert snapshot(root) == {"moved/here.txt": b"moving\n", "new/dir/a.txt": b"a\n"}


async def test_rename_then_update_of_the_new_path_in_one_plan(root: Path) -> None:
    put(root, "a.py", b"x = 1\n")
    ok, _, message = await run(root, RenameFile(path="a.py", new_path="b.py"), update("b.py", "x = 1\n", "x = 2\n"))
    assert ok, message
    assert snapshot(root) == {"b.py": b"x = 2\n"}


async def test_changed_on_disk_since_reading_is_a_conflict_and_nothing_is_written(root: Path) -> None:
    put(root, "a.py", b"x = 1\n")
    op = update("a.py", "x = 1\n", "x = 2\n")
    put(root, "a.py", b"x = 1\n# edited by the user\n")
    ok, failure, message = await run(root, op)
    assert not ok and failure is ApplyFailure.CONFLICT and "changed on disk since it was read" in message
    assert snapshot(root) == {"a.py": b"x = 1\n# edited by the user\n"}


async def test_a_second_update_of_a_file_in_one_plan_is_checked_against_the_first_ones_text(root: Path) -> None:
    put(root, "a.py", b"x = 1\n")
    first, stale = update("a.py", "x = 1\n", "x = 2\n"), update("a.py", "x = 1\n", "x = 3\n")
    ok, failure, message = await run(root, first, stale)
    assert not ok and failure is ApplyFailure.CONFLICT and "changed on disk since it was read" in message
    assert snapshot(root) == {"a.py": b"x = 1\n"}
    ok, _, message = await run(root, first, update("a.py", "x = 2\n", "x = 3\n"))
    assert ok, message
    assert snapshot(root) == {"a.py": b"x = 3\n"}


async def test_a_failing_precondition_in_a_later_op_leaves_earlier_files_untouched(root: Path) -> None:
    put(root, "one.txt", b"1\n")
    put(root, "two.txt", b"2\n")
    before = snapshot(root)
    ok, failure, message = await run(root, update("one.txt", "1\n", "one\n"), CreateFile(path="new.txt", text="n"),
                                     DeleteFile(path="two.txt", base_text="stale\n"))
    assert not ok and failure is ApplyFailure.CONFLICT and "two.txt" in message
    assert snapshot(root) == before


async def test_a_write_that_fails_midway_rolls_back_the_earlier_writes(root: Path) -> None:
    put(root, "one.txt", b"1\n")
    put(root, "blocker", b"a file where a directory is needed\n")
    before = snapshot(root)
    ok, failure, message = await run(root, update("one.txt", "1\n", "one\n"), CreateFile(path="a/new.txt", text="n"),
                                     CreateFile(path="blocker/child.txt", text="x"))
    assert not ok and failure is ApplyFailure.IO_ERROR and "restored" in message
    assert snapshot(root) == before
    assert not (root / "a").exists()  # directories it created are removed again


@pytest.mark.parametrize(("setup", "op", "expected"), [
    ({"a.txt": b"x"}, CreateFile(path="a.txt", text="y"), "already exists"),
    ({}, DeleteFile(path="a.txt", base_text=""), "does not exist"),
    ({}, RenameFile(path="a.txt", new_path="b.txt"), "does not exist"),
    ({"a.txt": b"a", "b.txt": b"b"}, RenameFile(path="a.txt", new_path="b.txt"), "b.txt exists"),
])
async def test_preconditions_of_each_op(root: Path, setup: dict[str, bytes], op: FileOp, expected: str) -> None:
    for rel, data in setup.items():
        put(root, rel, data)
    ok, failure, message = await run(root, op)
    assert not ok and failure is ApplyFailure.CONFLICT and expected in message
    assert snapshot(root) == setup


WRONG = UpdateFile(path="a.txt", base_text="abc\n", new_text="something else\n",
                   edits=[TextEdit(start=Position(line=0, character=0), end=Position(line=0, character=1),
                                   new_text="A")])


@pytest.fixture(params=["at once", "beside the write"])
def edits_check(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A small plan's edits are checked before anything is written; a large one's in a helper thread
    while its first file is written and synced (every plan counts as large here)."""
    from lsp_agent.disk import applier as disk_applier

    if request.param == "beside the write":
        monkeypatch.setattr(disk_applier, "CHECK_BESIDE_CHARS", 1)
    return str(request.param)


async def test_edits_that_do_not_produce_the_planned_text_are_never_written(root: Path, edits_check: str) -> None:
    put(root, "a.txt", b"abc\n")
    put(root, "b.txt", b"b\n")
    same = WRONG.model_copy(update={"new_text": "abc\n"})  # changes no byte: a delete is the first change
    delete = DeleteFile(path="b.txt", base_text="b\n")
    for ops in ([WRONG], [update("b.txt", "b\n", "B\n"), WRONG], [WRONG, delete], [same, delete], [same]):
        ok, failure, message = await run(root, *ops)
        assert not ok and failure is ApplyFailure.CONFLICT and "planned text" in message
        assert snapshot(root) == {"a.txt": b"abc\n", "b.txt": b"b\n"}  # no temp file left either


async def test_a_plan_whose_edits_fail_their_check_creates_no_directory(root: Path, edits_check: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Not even one a rollback would remove again: a directory is a change others can see."""
    made: list[str] = []
    real_mkdir = os.mkdir

    def mkdir(path: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        made.append(path)
        real_mkdir(path, mode, dir_fd=dir_fd)

    put(root, "a.txt", b"abc\n")
    monkeypatch.setattr(os, "mkdir", mkdir)
    ok, failure, message = await run(root, CreateFile(path="new/dir/c.txt", text="c\n"), WRONG)
    assert not ok and failure is ApplyFailure.CONFLICT and "planned text" in message
    assert made == [] and snapshot(root) == {"a.txt": b"abc\n"}


async def test_a_plan_whose_edits_pass_their_check_is_applied_whole(root: Path, edits_check: str) -> None:
    put(root, "a.py", b"x = 1\n")
    put(root, "old.txt", b"old\n")
    ok, _, message = await run(root, CreateFile(path="new/dir/c.txt", text="c\n"), update("a.py", "x = 1\n", "x = 2\n"),
                               DeleteFile(path="old.txt", base_text="old\n"))
    assert ok, message
    assert snapshot(root) == {"a.py": b"x = 2\n", "new/dir/c.txt": b"c\n"}


async def test_paths_outside_the_root_are_refused(root: Path) -> None:
    ok, failure, _ = await run(root, CreateFile(path="../outside.txt", text="x"))
    assert not ok and failure is ApplyFailure.REFUSED
    assert not (root.parent / "outside.txt").exists()


async def test_crlf_and_undecodable_bytes_survive_an_update_elsewhere(root: Path) -> None:
    data = b"keep \xff\xfe bytes\r\nchange me\r\n"
    put(root, "mixed.txt", data)
    text = data.decode("utf-8", "surrogateescape")
    op = UpdateFile(path="mixed.txt", base_text=text, new_text=text.replace("change me", "changed"),
                    edits=[TextEdit(start=Position(line=1, character=0), end=Position(line=1, character=9),
                                    new_text="changed")])
    ok, _, message = await run(root, op)
    assert ok, message
    assert (root / "mixed.txt").read_bytes() == b"keep \xff\xfe bytes\r\nchanged\r\n"


async def test_new_files_get_the_usual_permissions(root: Path) -> None:
    ok, _, _ = await run(root, CreateFile(path="n.txt", text="n"))
    umask = os.umask(0)
    os.umask(umask)
    assert ok and stat.S_IMODE((root / "n.txt").stat().st_mode) == 0o666 & ~umask


async def test_flush_is_a_no_op_success(root: Path) -> None:
    assert (await DiskApplier(root).flush(["a.txt"])).ok


def test_a_file_read_whole_even_when_it_grew_after_its_size_was_taken(root: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The applier reads a file in one read of the size fstat gave; a file larger by then (a writer
    appending meanwhile, here an fstat that reports less) is read to its end, not cut at that size."""
    from lsp_agent.disk import applier as disk_applier

    data = b"x" * 3000 + b"\n"
    (root / "grown.txt").write_bytes(data)
    mode = stat.S_IMODE(os.stat(root / "grown.txt").st_mode)
    real_fstat = os.fstat

    class Stale:
        def __init__(self, info: os.stat_result) -> None:
            self.st_mode, self.st_size = info.st_mode, 10

    monkeypatch.setattr(os, "fstat", lambda fd: Stale(real_fstat(fd)))
    with disk_applier._root_fd(root) as fd:
        assert disk_applier._read(fd, ("grown.txt",)) == (data, mode)


@pytest.mark.parametrize("change", ["same size", "grown", "cut", "deleted"])
async def test_a_file_changed_between_the_check_and_the_write_is_not_overwritten(
        root: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    """Just before replacing a file the applier reads it back (in small pieces here, so the change
    is found in a later piece than the first): a change since the check is a conflict, not lost."""
    from lsp_agent.disk import applier as disk_applier

    monkeypatch.setattr(disk_applier, "IO_PIECE", 4)
    put(root, "a.py", b"x = 1\ny = 2\n")
    op = update("a.py", "x = 1\ny = 2\n", "x = 1\ny = 3\n")
    users = {"same size": b"x = 1\ny = 9\n", "grown": b"x = 1\ny = 2\n\n", "cut": b"x = 1\ny = 2"}
    check = DiskApplier._simulate

    def then_the_user_edits(self: DiskApplier, plan: EditPlan) -> object:
        entries = check(self, plan)
        if change == "deleted":
            (root / "a.py").unlink()
        else:
            put(root, "a.py", users[change])
        return entries

    monkeypatch.setattr(DiskApplier, "_simulate", then_the_user_edits)
    ok, failure, message = await run(root, op)
    assert not ok and failure is ApplyFailure.CONFLICT and "changed on disk while the edit was applied" in message
    assert snapshot(root) == ({} if change == "deleted" else {"a.py": users[change]})


def test_a_file_read_back_in_pieces_is_unchanged_only_when_every_byte_is(root: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from lsp_agent.disk import applier as disk_applier

    monkeypatch.setattr(disk_applier, "IO_PIECE", 3)
    data = b"0123456789"
    put(root, "f.txt", data)
    with disk_applier._root_fd(root) as fd:
        assert unchanged(fd, ("f.txt",), data)
        assert not unchanged(fd, ("f.txt",), None)  # it exists now
        assert unchanged(fd, ("missing.txt",), None)
        assert not unchanged(fd, ("missing.txt",), data)
        for at in range(len(data)):  # one byte differs, in each piece in turn
            put(root, "f.txt", data[:at] + b"#" + data[at + 1:])
            assert not unchanged(fd, ("f.txt",), data), at


MIXED = "é\U0001F600 a\udcff\r\nb"  # two-, four-byte and undecodable characters across small pieces


@pytest.mark.parametrize("piece", [1, 2, 3, 1 << 16])
def test_a_file_is_compared_with_the_plans_text_a_piece_at_a_time(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  piece: int) -> None:
    """An update's file is read as the plan's own text when it holds it (no decoded copy) and as
    its bytes when it does not; a read-back compares the text with every byte."""
    from lsp_agent.disk import applier as disk_applier

    monkeypatch.setattr(disk_applier, "IO_PIECE", piece)
    data = MIXED.encode("utf-8", "surrogateescape")
    put(root, "f.txt", data)
    with disk_applier._root_fd(root) as fd:
        content, _ = disk_applier._read(fd, ("f.txt",), MIXED)
        assert content is MIXED
        assert unchanged(fd, ("f.txt",), MIXED)
        for at in range(len(data) + 1):  # one byte differs, or one more at the end
            other = data[:at] + b"#" + data[at + 1:]
            put(root, "f.txt", other)
            assert not unchanged(fd, ("f.txt",), MIXED), at
            assert disk_applier._read(fd, ("f.txt",), MIXED)[0] == other, at
        put(root, "f.txt", data[:-1])
        assert not unchanged(fd, ("f.txt",), MIXED)
        assert disk_applier._read(fd, ("f.txt",), MIXED)[0] == data[:-1]


@pytest.mark.parametrize("piece", [1, 3, 1 << 16])
async def test_an_update_is_written_from_its_text_a_piece_at_a_time(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    piece: int) -> None:
    from lsp_agent.disk import applier as disk_applier

    monkeypatch.setattr(disk_applier, "IO_PIECE", piece)
    put(root, "f.txt", MIXED.encode("utf-8", "surrogateescape"))
    new = MIXED + "\r\nc\U0001F600\udc80"
    op = UpdateFile(path="f.txt", base_text=MIXED, new_text=new,
                    edits=[TextEdit(start=Position(line=1, character=1), end=Position(line=1, character=1),
                                    new_text="\r\nc\U0001F600\udc80")])
    ok, _, message = await run(root, op)
    assert ok, message
    assert (root / "f.txt").read_bytes() == new.encode("utf-8", "surrogateescape")


@pytest.mark.parametrize("bad", ["\ud800", "x\udfff", "\udc7f"])
async def test_text_without_a_utf8_form_is_refused_before_any_write(root: Path, bad: str) -> None:
    """Texts are encoded as they are written: whether they can be is checked before the first file."""
    put(root, "one.txt", b"1\n")
    before = snapshot(root)
    for late in (CreateFile(path="new.txt", text=bad),
                 UpdateFile(path="two.txt", base_text="", new_text=bad,
                            edits=[TextEdit(start=Position(line=0, character=0), end=Position(line=0, character=0),
                                            new_text=bad)])):
        ops: list[FileOp] = [update("one.txt", "1\n", "one\n"), late]
        if isinstance(late, UpdateFile):
            put(root, "two.txt", b"")
            before = snapshot(root)
        ok, failure, message = await run(root, *ops)
        assert not ok and failure is ApplyFailure.REFUSED and "cannot be encoded" in message, message
        assert snapshot(root) == before


async def test_every_file_the_applier_opens_is_closed(root: Path) -> None:
    """Replaced and deleted files are closed in the helper thread (their last close frees their
    pages): none is left open once it has run."""
    from lsp_agent.disk import applier as disk_applier

    def open_fds() -> list[str]:
        # Only descriptors into the workspace: the process's others come and go with the rest of
        # the suite (a transport an earlier test left for the collector closes whenever it runs).
        inside = str(root.resolve())
        found = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target == inside or target.startswith(inside + "/"):
                found.append(target)
        return sorted(found)

    put(root, "keep.txt", b"0\n")
    before = open_fds()
    for n in range(20):
        put(root, f"gone{n}.txt", b"x\n")
        ok, _, message = await run(root, update("keep.txt", f"{n}\n", f"{n + 1}\n"),
                                   DeleteFile(path=f"gone{n}.txt", base_text="x\n"))
        assert ok, message
    disk_applier._HELPER.submit(lambda: None).result()  # after the closes it was given
    assert open_fds() == before
    assert snapshot(root) == {"keep.txt": b"20\n"}


KILLED_MID_WRITE = """
import os, sys
from pathlib import Path
from lsp_agent.disk import applier as disk_applier
from lsp_agent.disk.applier import DiskApplier
from lsp_agent.domain.edits import EditPlan, Position, TextEdit, UpdateFile

disk_applier._UNNAMED = sys.argv[2] == "unnamed"
os.fsync = lambda fd: os.kill(os.getpid(), 9)  # killed with the new text written, before it is synced
edit = TextEdit(start=Position(line=0, character=0), end=Position(line=1, character=0), new_text="new\\n")
DiskApplier(Path(sys.argv[1])).apply_sync(EditPlan(ops=[UpdateFile(path="a.txt", base_text="old\\n",
                                                                   new_text="new\\n", edits=[edit])]))
"""


@pytest.mark.parametrize("temp", ["unnamed", "named"])
def test_a_process_killed_while_writing_leaves_the_file_as_it_was(root: Path, temp: str) -> None:
    """Killed (kill -9) in the middle of an update: the file is untouched, and where the system can
    write a file without a name (Linux), no temp file is left beside it either."""
    if temp == "unnamed" and not hasattr(os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE here")
    put(root, "a.txt", b"old\n")
    done = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, str(root), temp], capture_output=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == -9, done.stderr
    left = snapshot(root)
    assert left.pop("a.txt") == b"old\n"
    if temp == "unnamed":
        assert left == {}
    else:  # a named temp file stays (the fallback where no unnamed file can be made)
        assert [name.startswith(".a.txt.") and name.endswith(".tmp") for name in left] == [True]
