"""The evidence rules, one refusal each: only the harness's own passing verify_project result at
the current clean revision counts, and validation needs another session at that revision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.domain.history import Message, Role, TextPart
from lsp_agent.domain.skill_rules import Rule
from tests.helpers import call
from tests.unit.test_skills_kit import (
    commit_all,
    copy_session,
    edit_part,
    project,
    proposal,
    pytest_check,
    service,
    store_for,
    text_part_citation,
    verify_in_new_session,
    verify_results_of_one_session,
)


async def _propose(root: Path, evidence: dict[str, str]) -> Any:
    return await service(root).propose(proposal("calc-tests", evidence))


async def test_a_text_part_is_not_evidence(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    passing = await verify_in_new_session(root)
    sentence = text_part_citation(root, passing["sessionID"])  # the model's "done"
    outcome = await _propose(root, sentence)
    assert not outcome.ok and outcome.rule is Rule.NOT_TOOL_RESULT, outcome.line()
    assert outcome.message.startswith("source evidence: ") and "not evidence" in outcome.message


async def test_another_tools_result_is_not_evidence(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    read = await verify_in_new_session(root, calls=[call("read_file", path="calc.py")])
    outcome = await _propose(root, read)
    assert not outcome.ok and outcome.rule is Rule.NOT_VERIFY_PROJECT, outcome.line()
    assert "read_file" in outcome.message


async def test_forged_passed_flags_on_a_failed_verification_are_recomputed_away(tmp_path: Path) -> None:
    root = project(tmp_path / "ws", {"calc.py": "def add(a, b):\n    return a - b\n"})
    failed = await verify_in_new_session(root)

    def forge(data: dict[str, Any]) -> None:
        data["ok"], data["output"], data["error_kind"] = True, "OK: verify passed", None
        data["metadata"]["passed"] = True
        data["metadata"]["envelope"]["status"] = "passed"

    edit_part(root, failed["partID"], forge)
    outcome = await _propose(root, failed)
    assert not outcome.ok and outcome.rule is Rule.ENVELOPE_INCONSISTENT, outcome.line()


async def test_a_failed_verification_is_not_evidence(tmp_path: Path) -> None:
    root = project(tmp_path / "ws", {"calc.py": "def add(a, b):\n    return a - b\n"})
    failed = await verify_in_new_session(root)
    outcome = await _propose(root, failed)
    assert not outcome.ok and outcome.rule is Rule.NOT_PASSED, outcome.line()
    assert "failed" in outcome.message


async def test_a_run_where_every_test_was_skipped_is_not_evidence(tmp_path: Path) -> None:
    skipped = "import pytest\n\n\ndef test_later():\n    pytest.skip('not yet')\n"
    root = project(tmp_path / "ws", {"test_skip.py": skipped})
    run = await verify_in_new_session(root, pytest_check("test_skip.py"))
    outcome = await _propose(root, run)
    assert not outcome.ok and outcome.rule is Rule.NOTHING_EXECUTED, outcome.line()


async def test_a_dirty_working_tree_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    passing = await verify_in_new_session(root)
    (root / "calc.py").write_text("def add(a, b):\n    return b + a\n", encoding="utf-8")
    outcome = await _propose(root, passing)
    assert not outcome.ok and outcome.rule is Rule.DIRTY_TREE, outcome.line()


async def test_a_proposal_file_inside_the_worktree_makes_it_dirty(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    passing = await verify_in_new_session(root)
    (root / "skill.json").write_text(proposal("calc-tests", passing), encoding="utf-8")  # not ignored
    outcome = await service(root).propose((root / "skill.json").read_bytes())
    assert not outcome.ok and outcome.rule is Rule.DIRTY_TREE, outcome.line()


async def test_a_verification_of_a_dirty_tree_is_not_evidence_even_once_clean(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    (root / "notes.txt").write_text("scratch\n", encoding="utf-8")
    dirty_run = await verify_in_new_session(root)
    (root / "notes.txt").unlink()
    outcome = await _propose(root, dirty_run)
    assert not outcome.ok and outcome.rule is Rule.NOT_CLEAN_AT_VERIFY, outcome.line()


async def test_revision_moved_after_propose_fails_validation_on_the_source(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    source = await verify_in_new_session(root)
    svc = service(root)
    assert (await svc.propose(proposal("calc-tests", source))).ok
    (root / "README.md").write_text("calc\n", encoding="utf-8")
    commit_all(root)
    later = await verify_in_new_session(root)  # passes, at the new revision
    outcome = await svc.validate("calc-tests", json.dumps({"evidence": later}))
    assert not outcome.ok and outcome.rule is Rule.REVISION_MOVED, outcome.line()
    assert outcome.message.startswith("source evidence: ")
    assert not svc.records.get("calc-tests").validated  # type: ignore[union-attr]


async def test_a_second_result_of_the_same_session_cannot_validate(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    first, second = await verify_results_of_one_session(root, 2)
    assert first["sessionID"] == second["sessionID"] and first["partID"] != second["partID"]
    svc = service(root)
    assert (await svc.propose(proposal("calc-tests", first))).ok
    outcome = await svc.validate("calc-tests", json.dumps({"evidence": second}))
    assert not outcome.ok and outcome.rule is Rule.SAME_SESSION, outcome.line()


@pytest.mark.parametrize(("flag", "rule"), [("reverted", Rule.REVERTED), ("compacted", Rule.COMPACTED)])
async def test_a_reverted_or_compacted_part_cannot_be_cited(tmp_path: Path, flag: str, rule: Rule) -> None:
    root = project(tmp_path / "ws")
    passing = await verify_in_new_session(root)
    edit_part(root, passing["partID"], lambda data: data["metadata"].__setitem__(flag, True))
    outcome = await _propose(root, passing)
    assert not outcome.ok and outcome.rule is rule, outcome.line()


async def test_a_part_a_compaction_summary_replaced_cannot_be_cited(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    passing = await verify_in_new_session(root)
    store = store_for(root)
    history = store.messages(passing["sessionID"])
    # The marker a compaction writes: the summary replaces everything before `keepFrom`.
    summary = Message(role=Role.USER, parts=[TextPart(text="[compaction summary #1]", synthetic=True, metadata={
        "compaction": {"seq": 1, "first": history[0].id, "last": history[-2].id, "keepFrom": history[-1].id}})])
    store.append_message(passing["sessionID"], summary)
    store.close()
    outcome = await _propose(root, passing)
    assert not outcome.ok and outcome.rule is Rule.COMPACTED and "compaction summary" in outcome.message


async def test_a_cited_part_changed_after_propose_breaks_the_source_citation(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    source = await verify_in_new_session(root)
    svc = service(root)
    assert (await svc.propose(proposal("calc-tests", source))).ok
    edit_part(root, source["partID"], lambda data: data.__setitem__("output", data["output"] + " (edited)"))
    other = await verify_in_new_session(root)
    outcome = await svc.validate("calc-tests", json.dumps({"evidence": other}))
    assert not outcome.ok and outcome.rule is Rule.SOURCE_CHANGED, outcome.line()


async def test_a_citation_with_the_wrong_session_or_an_unknown_part_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    passing = await verify_in_new_session(root)
    wrong = await _propose(root, {**passing, "sessionID": "ses_other"})
    assert not wrong.ok and wrong.rule is Rule.CITATION_MISMATCH, wrong.line()
    missing = await _propose(root, {**passing, "partID": "prt_nothing"})
    assert not missing.ok and missing.rule is Rule.PART_MISSING, missing.line()


async def test_evidence_from_another_workspace_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    other_root = project(tmp_path / "other")
    foreign = await verify_in_new_session(other_root)
    # The other workspace's record copied into this workspace's store.
    copy_session(other_root, root, foreign["sessionID"])
    outcome = await _propose(root, foreign)
    assert not outcome.ok and outcome.rule is Rule.OTHER_WORKSPACE, outcome.line()


async def test_a_refused_proposal_leaves_no_candidate(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    outcome = await _propose(root, {"sessionID": "s", "messageID": "m", "partID": "p"})
    assert not outcome.ok and outcome.rule is Rule.PART_MISSING
    assert service(root).list() == []
