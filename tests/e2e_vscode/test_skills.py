"""Promote a skill from the palette in a real VS Code window: a validated candidate (proposed from one
verified session, validated by another, as docs/skills.md requires) is picked in the quick pick, and
the new SKILL.md is written and opened."""

from __future__ import annotations

import asyncio
import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.e2e_vscode.conftest import AUTOSAVE, OpenVSCode
from tests.unit.test_skills_kit import CALC, GITIGNORE, TEST_CALC, proposal, service, verify_in_new_session

SKILL = ".lsp-agent/skills/calc-tests/SKILL.md"


def validated_candidate(root: Path) -> None:
    """A git repo with a clean tree and the candidate `calc-tests`, validated: the state in which
    "Promote Skill Candidate…" offers it."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], cwd=root, check=True)

    async def build() -> None:
        skills = service(root)
        source = await verify_in_new_session(root)
        proposed = await skills.propose(proposal("calc-tests", source))
        assert proposed.ok, proposed
        other = await verify_in_new_session(root)
        validated = await skills.validate("calc-tests", json.dumps({"evidence": other}))
        assert validated.ok, validated
        skills.store.close()

    # in a thread of its own: the sync Playwright API keeps an event loop running in this one
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, build()).result()


@pytest.mark.parametrize("autosave", AUTOSAVE)
def test_promote_a_validated_candidate_from_the_palette(open_vscode: OpenVSCode, autosave: str,
                                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the same store for the preparation here and the server code-server starts (it inherits the env)
    monkeypatch.setenv("LSP_AGENT_STATE_DIR", str(tmp_path / "agent-state"))
    vs = open_vscode(autosave, [], files={".gitignore": GITIGNORE, "calc.py": CALC, "test_calc.py": TEST_CALC},
                     prepare=validated_candidate)
    vs.command("LSP Agent: Promote Skill Candidate…")
    vs.pick("calc-tests")

    vs.page.locator(".tab.active", has_text="SKILL.md").wait_for(timeout=30_000)
    assert (vs.workspace / SKILL).read_text(encoding="utf-8").startswith("---\nname: calc-tests\n")
    assert "name: calc-tests" in vs.editor_text()
