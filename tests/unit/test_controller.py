"""The controller rejects hostile calls before any effect: classified, and the tree unchanged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import call, reply, run_script, tree_hash

HOSTILE = [
    ("read_file", None, {"path": "../outside.txt"}, "path_denied"),
    ("read_file", None, {"path": "/etc/passwd"}, "path_denied"),
    ("write_file", None, {"path": "escape/evil.txt", "content": "x"}, "path_denied"),
    ("read_file", None, {"path": "a\x00b.txt"}, "path_denied"),
    ("apply_patch", None, {"patch": "*** Begin Patch\n*** Add File: ../evil.txt\n+x\n*** End Patch\n"},
     "path_denied"),
    ("delete_everything", None, {"path": "."}, "unknown_tool"),
    ("read_file", None, {"path": "a.txt", "mode": "rw"}, "parameter_mismatch"),
    ("read_file", None, {}, "parameter_mismatch"),
    ("read_file", None, {"path": 5}, "parameter_mismatch"),
    ("read_file", '{"path": "a.txt"', None, "invalid_json"),
    ("read_file", '["a.txt"]', None, "parameter_mismatch"),
    ("write_file", None, {"path": "big.txt", "content": "x" * 101}, "parameter_mismatch"),
    ("write_file", None, {"path": "nul.txt", "content": "a\x00b"}, "parameter_mismatch"),
    ("run_command", None, {"command": "git push origin main"}, "denied"),
    ("run_command", None, {"command": "git commit -am wip"}, "denied"),
    ("run_command", None, {"command": "rm -rf ."}, "denied"),
    ("run_command", None, {"command": "$(rm -rf .)"}, "denied"),
    ("run_command", None, {"command": "`rm -rf .`"}, "denied"),
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "outside.txt").write_text("secret\n")
    os.symlink(outside, root / "escape")
    return root


@pytest.mark.parametrize(("tool", "raw", "args", "kind"), HOSTILE,
                         ids=[f"{h[0]}-{h[3]}-{i}" for i, h in enumerate(HOSTILE)])
async def test_hostile_call_is_rejected_with_its_class_and_changes_nothing(
        workspace: Path, tool: str, raw: str | None, args: dict[str, object] | None, kind: str) -> None:
    before = tree_hash(workspace.parent)
    scripted = call(tool, raw) if raw is not None else call(tool, **(args or {}))
    result, session = await run_script(workspace, [reply(scripted), reply(text="done")],
                                       limits={"write_bytes": 100})
    assert tree_hash(workspace.parent) == before
    tool_result = session.history[2].tool_results()[0]
    assert not tool_result.ok
    assert tool_result.error_kind is not None and tool_result.error_kind.value == kind
    assert tool_result.output.startswith("ERROR:")
    assert result.tool_errors == 1


async def test_shell_metacharacters_are_literal_arguments(workspace: Path) -> None:
    before = tree_hash(workspace)
    command = "python -c \"import sys; print(sys.argv[1:])\" '; rm -rf .' '$(touch pwned)' '`touch pwned2`'"
    _, session = await run_script(workspace, [reply(call("run_command", command=command)), reply(text="ok")])
    output = session.history[2].tool_results()[0].output
    assert output.startswith("OK: exit=0")
    assert "'; rm -rf .'" in output and "$(touch pwned)" in output and "`touch pwned2`" in output
    assert tree_hash(workspace) == before
    assert not (workspace / "pwned").exists()


async def test_rejection_is_the_calls_own_result_and_the_model_sees_it(workspace: Path) -> None:
    replies = [reply(call("nope"), call("read_file", path="a.txt")), reply(text="done")]
    result, session = await run_script(workspace, replies)
    results = session.history[2].tool_results()
    calls = session.history[1].tool_calls()
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert results[0].error_kind is not None and results[0].error_kind.value == "unknown_tool"
    assert "read_file" in results[0].output  # lists the available tools
    assert results[1].ok
    assert result.tool_calls == 2 and result.tool_errors == 1


@pytest.mark.parametrize("scripted", [
    call("write_file", path="new.txt", content="x\n"),
    call("apply_patch", path="a.txt", old_text="alpha", new_text="beta"),
    call("apply_patch", patch="*** Begin Patch\n*** Add File: b.txt\n+x\n*** End Patch\n"),
], ids=["write_file", "apply_patch-replace", "apply_patch-patch"])
async def test_read_only_mode_refuses_every_edit_and_the_run_goes_on(workspace: Path, scripted: Any) -> None:
    before = tree_hash(workspace.parent)
    result, session = await run_script(workspace, [reply(scripted), reply(call("read_file", path="a.txt")),
                                                   reply(text="done")], sandbox_mode="read-only")
    assert tree_hash(workspace.parent) == before
    refused, read = session.history[2].tool_results()[0], session.history[4].tool_results()[0]
    assert refused.error_kind is not None and refused.error_kind.value == "denied"
    assert "read-only mode" in refused.output and "--sandbox workspace-write" in refused.output
    assert read.ok and "alpha" in read.output
    assert result.tool_errors == 1
