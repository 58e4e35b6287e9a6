"""Every write counts: what a command changes in the workspace is recorded as its write,
drives the verification status like an edit tool's write, and the downgrade names it."""

from __future__ import annotations

import sys
from pathlib import Path

from lsp_agent.cli.sinks import summary_line
from lsp_agent.core.write_detect import UNKNOWN, changed, not_ignored, snapshot
from lsp_agent.tools.list_dir import git_ignored_paths
from tests.helpers import call, git_repo, reply, run_script, verify_config

PY = sys.executable
BREAK = "python3 -c \"open('result.txt','w').write('5')\""


def _check_wants(root: Path, value: str) -> None:
    (root / "check.py").write_text(
        f"import sys, pathlib\nsys.exit(0 if pathlib.Path('result.txt').read_text().strip() == {value!r} else 1)\n")
    verify_config(root, [PY, "check.py"])


async def test_command_that_breaks_a_verified_file_ends_not_run_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "result.txt").write_text("4")
    _check_wants(tmp_path, "4")
    replies = [reply(call("read_file", path="result.txt")), reply(call("verify_project")),
               reply(call("run_command", command=BREAK)), reply(text="all good, verified")]
    result, session = await run_script(tmp_path, replies)
    assert (tmp_path / "result.txt").read_text() == "5"
    assert (result.stop_reason.value, result.verification.value) == ("final", "not_run")
    assert result.invalidated_by is not None
    assert (result.invalidated_by.paths, result.invalidated_by.by, result.invalidated_by.tool) == (
        ["result.txt"], "command", "run_command")
    assert result.invalidated_by.step == 3
    assert result.verification_reason is not None and "result.txt" in result.verification_reason
    assert "command" in result.verification_reason and "verified" in result.verification_reason
    assert result.files_changed == ["result.txt"]
    line = summary_line(result)
    assert "not_run (result.txt written by a command (run_command) at step 3" in line
    # The stale-observation mark follows: the earlier read of result.txt is marked stale.
    notes = [p.text for m in session.history for p in m.parts if getattr(p, "synthetic", False)]
    assert any("[stale: result.txt rewritten at step 3" in n for n in notes)


async def test_read_only_command_keeps_the_check(tmp_path: Path) -> None:
    (tmp_path / "result.txt").write_text("4")
    _check_wants(tmp_path, "4")
    replies = [reply(call("verify_project")), reply(call("run_command", command="cat result.txt")),
               reply(text="done")]
    result, _ = await run_script(tmp_path, replies)
    assert result.verification.value == "verified"
    assert result.invalidated_by is None and result.verification_reason is None


async def test_verify_whose_run_changes_a_source_does_not_stand(tmp_path: Path) -> None:
    (tmp_path / "gen.py").write_text("x = 0\n")
    (tmp_path / "check.py").write_text("import pathlib\npathlib.Path('gen.py').write_text('x = 1\\n')\n"
                                       "pathlib.Path('report.xml').write_text('<ok/>')\n"
                                       "pathlib.Path('.coverage').write_text('data')\n")
    verify_config(tmp_path, [PY, "check.py"])
    result, _ = await run_script(tmp_path, [reply(call("verify_project")), reply(text="done")])
    assert result.verification.value == "not_run"
    assert result.invalidated_by is not None
    # The changed source counts; the check's new artifacts (a report, coverage data) do not.
    assert (result.invalidated_by.paths, result.invalidated_by.by, result.invalidated_by.tool) == (
        ["gen.py"], "command", "verify_project")


async def test_a_check_that_only_leaves_artifacts_stands(tmp_path: Path) -> None:
    (tmp_path / "check.py").write_text("import pathlib\npathlib.Path('report.xml').write_text('<ok/>')\n")
    verify_config(tmp_path, [PY, "check.py"])
    result, _ = await run_script(tmp_path, [reply(call("verify_project")), reply(text="done")])
    assert result.verification.value == "verified" and result.invalidated_by is None


async def test_edit_after_check_names_the_agent_tool(tmp_path: Path) -> None:
    (tmp_path / "result.txt").write_text("4")
    _check_wants(tmp_path, "4")
    replies = [reply(call("verify_project")),
               reply(call("apply_patch", path="result.txt", old_text="4", new_text="4\n")), reply(text="ok")]
    result, _ = await run_script(tmp_path, replies)
    assert result.verification.value == "not_run"
    assert result.invalidated_by is not None
    assert (result.invalidated_by.by, result.invalidated_by.tool, result.invalidated_by.paths) == (
        "agent_tool", "apply_patch", ["result.txt"])


async def test_git_ignored_changes_are_not_sources(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "w", {".gitignore": "build/\n", "a.py": "x = 1\n"})
    before = snapshot(root)
    (root / "build").mkdir()
    (root / "build" / "out.o").write_text("obj")
    (root / "a.py").write_text("x = 2\n")
    (root / "new.py").write_text("y = 1\n")
    after = snapshot(root)
    assert changed(before, after) == ["a.py", "build/out.o", "new.py"]
    assert await not_ignored(root, changed(before, after), git_ignored_paths) == ["a.py", "new.py"]


def test_deleted_and_unknown(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    before = snapshot(tmp_path)
    (tmp_path / "a.txt").unlink()
    assert changed(before, snapshot(tmp_path)) == ["a.txt"]
    assert changed(None, snapshot(tmp_path)) == [UNKNOWN]
