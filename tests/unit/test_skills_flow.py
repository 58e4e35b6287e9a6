"""Skill candidates end to end in the core: propose → validate → promote → discovered → retire,
with real Git repositories and real verify_project runs through the loop."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

from lsp_agent.context.instructions import BASE_INSTRUCTIONS
from lsp_agent.domain.history import ToolResultPart
from lsp_agent.domain.skill_records import State
from lsp_agent.domain.skill_rules import Rule
from lsp_agent.skills.promote import render_skill, write_skill
from lsp_agent.skills.service import SkillService
from tests.helpers import call, reply
from tests.unit.test_skills_kit import (
    PYTEST,
    git,
    project,
    proposal,
    run_recorded,
    service,
    store_for,
    validated,
    verify_in_new_session,
    visible,
)

SKILL = ".lsp-agent/skills/calc-tests/SKILL.md"


async def test_verified_work_becomes_a_skill_the_agent_lists_reads_and_loses_on_retire(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    source = await verify_in_new_session(root, PYTEST)  # session A: pytest passes
    svc = service(root)
    # The proposal lives in an ignored folder, so the tree stays clean.
    (root / "proposals").mkdir()
    (root / "proposals" / "calc.json").write_text(proposal("calc-tests", source), encoding="utf-8")
    assert git(root, "status", "--porcelain") == ""
    proposed = await svc.propose((root / "proposals" / "calc.json").read_bytes())
    assert proposed.ok, proposed.line()
    assert proposed.candidate is not None and proposed.candidate.state is State.PENDING
    assert not proposed.candidate.validated and proposed.candidate.source.part_id == source["partID"]

    independent = await verify_in_new_session(root, PYTEST)  # session B, same revision
    checked = await svc.validate("calc-tests", json.dumps({"name": "calc-tests", "evidence": independent}))
    assert checked.ok, checked.line()
    assert checked.candidate is not None and checked.candidate.validation is not None
    assert checked.candidate.validation.session_id == independent["sessionID"]

    promoted = await svc.promote("calc-tests")
    assert promoted.ok, promoted.line()
    assert promoted.path == SKILL and promoted.candidate is not None and promoted.candidate.state is State.ACTIVE
    info = os.lstat(root / SKILL)
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o644 and info.st_nlink == 1
    text = (root / SKILL).read_text(encoding="utf-8")
    assert text.startswith('---\nname: calc-tests\ndescription: "Run the calc tests"\n'
                           'applicability: "When calc.py changes."\n---\n')
    assert "## Applicability\n\nWhen calc.py changes.\n" in text
    assert "## Procedure\n\n1. Edit calc.py.\n2. Run verify_project.\n" in text
    assert source["partID"] in text and independent["partID"] in text

    # The agent's next request lists it (name: description) and read_skill returns it.
    read = call("read_skill", raw='{"name": "calc-tests"}')
    provider, session = await run_recorded(root, [reply(read), reply(text="ok")])
    first = provider.requests[0]
    assert first.instructions == BASE_INSTRUCTIONS
    assert "- calc-tests: Run the calc tests" in visible(first)
    second = provider.requests[1]  # extends the first (prefix caching)
    assert second.instructions == first.instructions and second.messages[:len(first.messages)] == first.messages
    result = next(p for m in session.history for p in m.parts if isinstance(p, ToolResultPart))
    assert result.ok and result.output.startswith(f"OK: skill calc-tests ({SKILL})\n---\nname: calc-tests")
    assert result.metadata["read"] == [SKILL]

    retired = await svc.retire("calc-tests")
    assert retired.ok and retired.changed, retired.line()
    assert not (root / SKILL).exists() and not (root / SKILL).parent.exists()
    provider, _ = await run_recorded(root, [reply(text="ok")])
    assert "calc-tests" not in visible(provider.requests[0])
    again = await svc.retire("calc-tests")
    assert again.ok and not again.changed and again.candidate is not None
    assert again.candidate.state is State.RETIRED


async def test_interrupted_promotion_is_finished_by_the_next_promote(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    svc, _, _ = await validated(root)
    candidate = svc.records.get("calc-tests")
    assert candidate is not None
    # The crash: the file is written (exactly as promotion writes it), the state never changed.
    write_skill(root, "calc-tests", render_skill(candidate))
    inode = os.lstat(root / SKILL).st_ino
    assert svc.records.get("calc-tests").state is State.PENDING  # type: ignore[union-attr]

    resumed = await svc.promote("calc-tests")
    assert resumed.ok, resumed.line()
    assert "interrupted promotion" in resumed.message
    assert resumed.candidate is not None and resumed.candidate.state is State.ACTIVE
    assert os.lstat(root / SKILL).st_ino == inode  # finished, not rewritten
    repeated = await svc.promote("calc-tests")
    assert repeated.ok and not repeated.changed


async def test_existing_skill_file_is_never_overwritten(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    svc, _, _ = await validated(root)
    (root / SKILL).parent.mkdir(parents=True)
    (root / SKILL).write_text("---\nname: calc-tests\ndescription: mine\n---\nhand-written\n", encoding="utf-8")
    outcome = await svc.promote("calc-tests")
    assert not outcome.ok and outcome.rule is Rule.SKILL_EXISTS, outcome.line()
    assert (root / SKILL).read_text(encoding="utf-8").endswith("hand-written\n")
    assert svc.records.get("calc-tests").state is State.PENDING  # type: ignore[union-attr]


async def test_proposing_a_name_that_already_has_a_skill_file_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path / "ws", {".lsp-agent/skills/calc-tests/SKILL.md": "---\nname: calc-tests\n---\n"})
    source = await verify_in_new_session(root)
    outcome = await service(root).propose(proposal("calc-tests", source))
    assert not outcome.ok and outcome.rule is Rule.SKILL_EXISTS, outcome.line()


async def test_hand_edited_skill_file_is_a_conflict_on_retire_and_stays(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    svc, _, _ = await validated(root)
    assert (await svc.promote("calc-tests")).ok
    edited = (root / SKILL).read_text(encoding="utf-8") + "\nMy own note.\n"
    (root / SKILL).write_text(edited, encoding="utf-8")
    outcome = await svc.retire("calc-tests")
    assert not outcome.ok and outcome.rule is Rule.SKILL_MODIFIED, outcome.line()
    assert "edited" in outcome.message
    assert (root / SKILL).read_text(encoding="utf-8") == edited
    assert svc.records.get("calc-tests").state is State.ACTIVE  # type: ignore[union-attr]


async def test_hard_linked_skill_file_is_not_retired(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    svc, _, _ = await validated(root)
    assert (await svc.promote("calc-tests")).ok
    os.link(root / SKILL, tmp_path / "elsewhere.md")
    outcome = await svc.retire("calc-tests")
    assert not outcome.ok and outcome.rule is Rule.SKILL_MODIFIED and "hard links" in outcome.message
    assert (root / SKILL).exists()


async def test_a_locked_candidate_cannot_be_promoted_by_another_process(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    svc, _, _ = await validated(root)
    other = SkillService(store_for(root), root)  # its own connection, as another process has
    with svc.records.locked("calc-tests"):
        outcome = await other.promote("calc-tests")
        assert not outcome.ok and outcome.rule is Rule.LOCKED, outcome.line()
        assert not (root / SKILL).exists()
    assert (await other.promote("calc-tests")).ok


async def test_two_promotions_at_once_write_the_file_once(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    await validated(root)
    first, second = SkillService(store_for(root), root), SkillService(store_for(root), root)
    outcomes = await asyncio.gather(first.promote("calc-tests"), second.promote("calc-tests"))
    assert all(o.ok or o.rule is Rule.LOCKED for o in outcomes), [o.line() for o in outcomes]
    assert sum(1 for o in outcomes if o.ok and o.changed) == 1
    assert first.records.get("calc-tests").state is State.ACTIVE  # type: ignore[union-attr]
