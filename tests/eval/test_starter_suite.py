"""The starter task suite (examples/eval): valid tasks, strict oracles, runnable end to end.

A scripted arm applies each task's reference solution (kept in tests/, away from the agent), the
other changes nothing: every oracle must fail on the fresh fixture, pass on the solution and fail
on the untouched files. TypeScript tasks need `tsc` (the VS Code client's, after `npm ci`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from evalkit import HERE, PY, attempts, run_cohort

from lsp_agent.eval.manifest import Manifest, load_manifest

REPO = HERE.parent.parent
SUITE = REPO / "examples" / "eval"
SMOKE = SUITE / "smoke.json"
SOLUTIONS = HERE / "starter_solutions"
CLIENT_BIN = REPO / "vscode-client" / "node_modules" / ".bin"


def is_typescript(task: Any) -> bool:
    return any(f.path == "tsconfig.json" for f in task.files)


def test_the_suite_is_a_valid_two_arm_manifest_of_python_and_typescript_tasks() -> None:
    manifest = load_manifest(SMOKE)
    assert 10 <= len(manifest.tasks) <= 20
    typescript = [t.id for t in manifest.tasks if is_typescript(t)]
    assert 3 <= len(typescript) < len(manifest.tasks)
    assert [a.features for a in manifest.arms] == [{}, {"tail_reminders": True}]
    for task in manifest.tasks:
        assert task.oracle == ["python3", "oracles/check.py", task.id]
        assert (SUITE / "oracles" / "hidden" / task.id).is_dir() and (SOLUTIONS / task.id).is_dir()
    assert manifest.command is None  # the user's own lsp-agent, with the model they configured


def test_model_override_makes_a_new_cohort() -> None:
    mine, theirs = load_manifest(SMOKE), load_manifest(SMOKE, model="scripted/other")
    assert theirs.model == "scripted/other" and theirs.cohort() != mine.cohort()
    assert [t.files for t in theirs.tasks] == [t.files for t in mine.tasks]


def test_every_oracle_fails_fresh_passes_the_reference_fix_and_fails_untouched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if CLIENT_BIN.is_dir():
        monkeypatch.setenv("PATH", f"{CLIENT_BIN}{os.pathsep}{os.environ['PATH']}")
    if shutil.which("tsc") is None and os.environ.get("CI") != "true":
        pytest.skip("no tsc: run `npm ci` in vscode-client (CI does)")
    suite = load_manifest(SMOKE)
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({t.prompt: t.id for t in suite.tasks}))
    data = suite.model_dump(mode="json")
    data.update(model="scripted/solver", command=[PY, str(HERE / "solver_agent.py")], timeoutMs=120_000,
                arms=[{"name": "solved", "config": {"solutions": str(SOLUTIONS), "prompts": str(prompts)}},
                      {"name": "untouched", "config": {"prompts": str(prompts)}}])
    lines, err, result = run_cohort(Manifest.model_validate(data).model_dump(mode="json"), jobs=2,
                                    base_dir=SUITE)
    assert [line for line in lines if line["type"] == "task_invalid"] == [], err
    outcomes = {(r["task"], r["arm"]): r["outcome"] for r in attempts(lines)}
    assert outcomes == {**{(t.id, "solved"): "verified" for t in suite.tasks},
                        **{(t.id, "untouched"): "failed" for t in suite.tasks}}, err
    assert result.exit_code == 0
