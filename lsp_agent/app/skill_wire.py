"""Skill records and outcomes as the wire's models: the one place that knows both the skills
package and the protocol's shapes, so the protocol describes the wire without loading skills."""

from __future__ import annotations

from pathlib import Path

from lsp_agent.domain.skill_records import Candidate, Evidence, State
from lsp_agent.protocol.skill_models import CandidateOut, EvidenceOut, SkillOut, SkillResult
from lsp_agent.skills.discovery import SkillInfo
from lsp_agent.skills.files import skill_rel
from lsp_agent.skills.service import Outcome, candidate_view


def evidence_out(evidence: Evidence) -> EvidenceOut:
    return EvidenceOut.model_validate(evidence.model_dump())


def candidate_out(candidate: Candidate) -> CandidateOut:
    promoted = candidate.state in (State.ACTIVE, State.RETIRING)
    return CandidateOut(
        name=candidate.name, state=candidate.state, validated=candidate.validated,
        description=candidate.description, applicability=candidate.applicability, procedure=candidate.procedure,
        source=evidence_out(candidate.source),
        validation=evidence_out(candidate.validation) if candidate.validation else None,
        skill_path=skill_rel(candidate.name) if promoted else None, skill_hash=candidate.skill_hash,
        created_at=candidate.created_at, updated_at=candidate.updated_at, validated_at=candidate.validated_at,
        promoted_at=candidate.promoted_at, retired_at=candidate.retired_at)


def skill_result(outcome: Outcome, root: Path, *, view: bool = False) -> SkillResult:
    candidate = outcome.candidate
    uri = (root / outcome.path).as_uri() if outcome.path and outcome.ok and candidate is not None \
        and candidate.state is State.ACTIVE else None
    return SkillResult(ok=outcome.ok, rule=outcome.rule, message=outcome.message, changed=outcome.changed,
                       candidate=candidate_out(candidate) if candidate else None, path=outcome.path, uri=uri,
                       view=candidate_view(candidate) if view and candidate else None)


def skill_out(info: SkillInfo) -> SkillOut:
    return SkillOut(name=info.name, description=info.description, path=info.path)
