"""`lsp-agent skill candidate …`: the whole flow from the command line, and its exit codes
(0 done, 1 a rule failed, 2 usage)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_agent.cli.main import main
from tests.unit.test_skills_kit import project, proposal, verify_in_new_session


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["skill", "candidate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_proposes_validates_promotes_lists_and_retires(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path / "ws")
    ws = ["--workspace", str(root)]
    source = asyncio.run(verify_in_new_session(root))
    (tmp_path / "proposal.json").write_text(proposal("calc-tests", source), encoding="utf-8")  # outside the tree
    code, out, _ = _cli(capsys, "propose", "--proposal", str(tmp_path / "proposal.json"), *ws)
    assert code == 0 and out.startswith("OK: candidate calc-tests proposed (pending)")

    code, out, _ = _cli(capsys, "show", "calc-tests", *ws)
    assert code == 0 and out.startswith("# Skill candidate calc-tests\n\nState: pending\n")

    other = asyncio.run(verify_in_new_session(root))
    (tmp_path / "validation.json").write_text(json.dumps({"evidence": other}), encoding="utf-8")
    code, out, _ = _cli(capsys, "validate", "calc-tests", "--proposal", str(tmp_path / "validation.json"), *ws)
    assert code == 0 and "validated" in out

    code, out, _ = _cli(capsys, "promote", "calc-tests", "--json", *ws)
    result = json.loads(out)
    assert code == 0 and result["ok"] and result["path"] == ".lsp-agent/skills/calc-tests/SKILL.md"
    assert result["candidate"]["state"] == "active" and result["uri"].startswith("file://")
    assert (root / result["path"]).is_file()

    code, out, _ = _cli(capsys, "list", "--json", *ws)
    listing = json.loads(out)
    assert code == 0 and [c["name"] for c in listing["candidates"]] == ["calc-tests"]
    assert listing["skills"] == [{"name": "calc-tests", "description": "Run the calc tests",
                                  "path": ".lsp-agent/skills/calc-tests/SKILL.md"}]

    assert _cli(capsys, "retire", "calc-tests", *ws)[0] == 0
    code, out, _ = _cli(capsys, "retire", "calc-tests", *ws)
    assert code == 0 and "already retired" in out
    assert not (root / result["path"]).exists()


def test_a_failed_rule_exits_1_and_names_the_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path / "ws")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (40 * 1024 + 1))
    code, out, err = _cli(capsys, "propose", "--proposal", str(big), "--workspace", str(root))
    assert (code, out) == (1, "") and "proposal_too_large" in err
    code, _, err = _cli(capsys, "show", "../x", "--workspace", str(root))
    assert code == 1 and "bad_name" in err
    code, _, err = _cli(capsys, "promote", "nobody", "--workspace", str(root))
    assert code == 1 and "unknown_candidate" in err
    (tmp_path / "loose.json").write_text("{'name': 1}", encoding="utf-8")
    code, out, _ = _cli(capsys, "propose", "--proposal", str(tmp_path / "loose.json"), "--workspace", str(root),
                        "--json")
    assert code == 1 and json.loads(out)["rule"] == "proposal_not_json"


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "propose", "--proposal", str(tmp_path / "missing.json"), "--workspace", str(tmp_path))
    assert code == 2 and "cannot read the proposal file" in err
    code, _, err = _cli(capsys, "list", "--workspace", str(tmp_path / "nowhere"))
    assert code == 2 and "not a directory" in err
    with pytest.raises(SystemExit) as exited:
        main(["skill", "candidate", "validate", "calc-tests"])  # --proposal is required
    assert exited.value.code == 2


def test_the_installed_command_runs_the_skill_subcommand(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "lsp_agent", "skill", "candidate", "show", "../x", "--workspace",
                           str(tmp_path)], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "bad_name" in done.stderr and done.stdout == ""
