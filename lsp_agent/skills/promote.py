"""Promotion's file side: the SKILL.md a candidate becomes, and writing it safely.

The content is a pure function of the record (no timestamps), so the hash promotion writes can be
recomputed at any time: a promotion interrupted after the write and before the state change is
recognised on the next attempt by its file already having exactly that hash.
"""

from __future__ import annotations

import json
from pathlib import Path

from lsp_agent.domain.skill_records import Candidate
from lsp_agent.skills.files import (
    SKILL_FILE,
    SKILLS_PARTS,
    FileState,
    directory,
    read_regular,
    sha256,
    skill_rel,
    write_exclusive,
)


def render_skill(candidate: Candidate) -> bytes:
    """SKILL.md: front matter (name, description, applicability), then Applicability and Procedure."""
    source = candidate.source
    lines = [
        "---",
        f"name: {candidate.name}",
        # JSON strings are valid YAML double-quoted scalars: any text stays one safe line.
        f"description: {json.dumps(candidate.description, ensure_ascii=False)}",
        f"applicability: {json.dumps(candidate.applicability.strip(), ensure_ascii=False)}",
        "---",
        "",
        f"# {candidate.name}",
        "",
        candidate.description,
        "",
        "## Applicability",
        "",
        candidate.applicability.strip(),
        "",
        "## Procedure",
        "",
        candidate.procedure.strip(),
        "",
        f"<!-- promoted by lsp-agent from verify_project evidence at revision {source.revision}: "
        f"source part {source.part_id} (session {source.session_id})"
        + (f", validated by part {candidate.validation.part_id} (session {candidate.validation.session_id})"
           if candidate.validation else "")
        + " -->",
        "",
    ]
    return "\n".join(lines).encode("utf-8")


def expected_digest(candidate: Candidate) -> str:
    return sha256(render_skill(candidate))


def existing_skill(root: Path, name: str) -> FileState:
    """What is at .lsp-agent/skills/NAME/SKILL.md now; RuleFailed(symlink) for a link on the way."""
    with directory(root, (*SKILLS_PARTS, name)) as fd:
        if fd is None:
            return FileState(False)
        state, _ = read_regular(fd, SKILL_FILE, limit=0)
        return state


def write_skill(root: Path, name: str, data: bytes) -> None:
    """Create the skill file (and its directories) exclusively; RuleFailed when anything is in the way."""
    with directory(root, (*SKILLS_PARTS, name), create=True) as fd:
        assert fd is not None  # created when missing
        write_exclusive(fd, SKILL_FILE, data, skill_rel(name))
