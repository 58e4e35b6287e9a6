"""Proposal files and skill file writes: size and strict JSON, names, and symlinks on the way to
`.lsp-agent/skills/NAME/SKILL.md` (also ones Git would never show)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_agent.domain.skill_records import MAX_PROPOSAL_BYTES, State, parse_proposal
from lsp_agent.domain.skill_rules import MAX_NAME_CHARS, Rule, RuleFailed, check_name
from tests.unit.test_skills_kit import git, project, proposal, service, validated

EVIDENCE = {"sessionID": "ses_a", "messageID": "msg_a", "partID": "prt_a"}


def _padded(size: int) -> bytes:
    text = proposal("calc-tests", EVIDENCE).encode()
    return text + b" " * (size - len(text))  # trailing whitespace is still strict JSON


def test_a_proposal_at_the_size_limit_is_read_and_one_byte_more_is_refused() -> None:
    assert parse_proposal(_padded(MAX_PROPOSAL_BYTES)).name == "calc-tests"
    with pytest.raises(RuleFailed) as refused:
        parse_proposal(_padded(MAX_PROPOSAL_BYTES + 1))
    assert refused.value.rule is Rule.PROPOSAL_TOO_LARGE and str(MAX_PROPOSAL_BYTES) in refused.value.message


async def test_a_proposal_over_40_kb_is_refused_by_propose(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    outcome = await service(root).propose(_padded(40 * 1024 + 1))
    assert not outcome.ok and outcome.rule is Rule.PROPOSAL_TOO_LARGE, outcome.line()


@pytest.mark.parametrize("text", [
    '{"name": "a", "name": "b"}',  # duplicate key
    '{"name": NaN}',
    "{'name': 'single quotes'}",
    '{"name": "x"} trailing',
    "[1, 2]",
    "",
])
def test_anything_but_one_strict_json_object_is_refused(text: str) -> None:
    with pytest.raises(RuleFailed) as refused:
        parse_proposal(text)
    assert refused.value.rule is Rule.PROPOSAL_NOT_JSON


def test_a_proposal_with_missing_unknown_or_loosely_typed_fields_is_refused() -> None:
    body = json.loads(proposal("calc-tests", EVIDENCE))
    for broken in ({k: v for k, v in body.items() if k != "procedure"}, {**body, "extra": 1},
                   {**body, "evidence": {**EVIDENCE, "partID": 5}}, {**body, "description": "two\nlines"}):
        with pytest.raises(RuleFailed) as refused:
            parse_proposal(json.dumps(broken))
        assert refused.value.rule is Rule.PROPOSAL_INVALID


@pytest.mark.parametrize("name", ["../x", "", "a" * (MAX_NAME_CHARS + 1), "Calc", "-x", "x-", "a/b", "a b", "x\n"])
async def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(RuleFailed) as refused:
        check_name(name)
    assert refused.value.rule is Rule.BAD_NAME
    root = tmp_path / "ws"
    root.mkdir()
    outcome = await service(root).propose(proposal(name, EVIDENCE))
    assert not outcome.ok and outcome.rule is Rule.BAD_NAME, outcome.line()
    assert not (await service(root).promote(name)).ok
    assert not (root / ".lsp-agent").exists()


def test_the_longest_name_is_accepted() -> None:
    assert check_name("a" * MAX_NAME_CHARS) == "a" * MAX_NAME_CHARS


@pytest.mark.parametrize("link", [".lsp-agent", ".lsp-agent/skills", ".lsp-agent/skills/calc-tests"])
async def test_a_symlinked_folder_on_the_way_is_refused_even_when_git_hides_it(tmp_path: Path, link: str) -> None:
    root = project(tmp_path / "ws")
    svc, _, _ = await validated(root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / link).parent.mkdir(parents=True, exist_ok=True)
    (root / link).symlink_to(outside, target_is_directory=True)
    with (root / ".git" / "info" / "exclude").open("a", encoding="utf-8") as exclude:
        exclude.write(".lsp-agent\n")
    assert git(root, "status", "--porcelain") == ""  # Git sees nothing: only lstat does
    outcome = await svc.promote("calc-tests")
    assert not outcome.ok and outcome.rule is Rule.SYMLINK, outcome.line()
    assert link in outcome.message
    assert list(outside.rglob("*")) == []
    assert svc.records.get("calc-tests").state is State.PENDING  # type: ignore[union-attr]


async def test_a_file_where_a_folder_belongs_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    svc, _, _ = await validated(root)
    (root / ".lsp-agent").mkdir()
    (root / ".lsp-agent" / "skills").write_text("not a folder\n", encoding="utf-8")
    outcome = await svc.promote("calc-tests")
    assert not outcome.ok and outcome.rule is Rule.NOT_A_DIRECTORY, outcome.line()
