"""Skill candidate records and the proposal files that create and validate them.

A proposal file is strict JSON (no NaN, no duplicate keys, UTF-8, at most MAX_PROPOSAL_BYTES) with
exactly the fields below; the evidence is a citation of a stored part by its three IDs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator

from lsp_agent.domain import bounded_json
from lsp_agent.domain.history import Role
from lsp_agent.domain.skill_rules import Rule, RuleFailed, check_name
from lsp_agent.domain.wire import WireModel

#: Largest proposal file accepted (bytes). A procedure longer than this belongs in the repository.
MAX_PROPOSAL_BYTES = 40 * 1024
MAX_DESCRIPTION_CHARS = 1024
MAX_APPLICABILITY_CHARS = 8_000
MAX_PROCEDURE_CHARS = 32_000

_ID = Field(min_length=1, max_length=200)


class State(StrEnum):
    PENDING = "pending"  # proposed; validated once `validation` is set
    ACTIVE = "active"  # promoted: SKILL.md written
    RETIRING = "retiring"  # its file is being removed
    RETIRED = "retired"


class _Strict(WireModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class Citation(_Strict):
    """Which stored part is the evidence: a verify_project tool result, by its IDs."""

    session_id: str = Field(min_length=1, max_length=200, description="The session of the cited part.")
    message_id: str = Field(min_length=1, max_length=200, description="The message holding the part.")
    part_id: str = Field(min_length=1, max_length=200, description="The verify_project tool-result part.")


def _one_line(value: str) -> str:
    if "\n" in value or "\r" in value:
        raise ValueError("must be a single line")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


class Proposal(_Strict):
    name: str = Field(max_length=200)
    description: str = Field(max_length=MAX_DESCRIPTION_CHARS)
    applicability: str = Field(max_length=MAX_APPLICABILITY_CHARS)
    procedure: str = Field(max_length=MAX_PROCEDURE_CHARS)
    evidence: Citation

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        return _one_line(_not_blank(value))

    @field_validator("applicability", "procedure")
    @classmethod
    def _text(cls, value: str) -> str:
        return _not_blank(value)


class ValidationProposal(_Strict):
    """The independent evidence for `validate`: another session's passing verification."""

    name: str | None = Field(None, max_length=200)
    evidence: Citation


class Evidence(WireModel):
    """A citation that passed the evidence rules, with what was seen when it did."""

    session_id: str
    message_id: str
    part_id: str
    digest: str  # sha256 of the stored part: any later change to it breaks the citation
    revision: str
    fingerprint: str

    def citation(self) -> Citation:
        return Citation(session_id=self.session_id, message_id=self.message_id, part_id=self.part_id)


class Candidate(WireModel):
    name: str
    state: State
    description: str
    applicability: str
    procedure: str
    source: Evidence
    validation: Evidence | None = None
    skill_hash: str | None = None  # sha256 of the SKILL.md promotion wrote
    created_at: int
    updated_at: int
    validated_at: int | None = None
    promoted_at: int | None = None
    retired_at: int | None = None

    @property
    def validated(self) -> bool:
        return self.validation is not None


@dataclass(frozen=True)
class StoredPart:
    """A stored part as the evidence rules read it: its JSON exactly as written (the evidence's
    digest is taken over these bytes) and where it sits in the record."""

    session_id: str
    message_id: str
    data: str
    role: Role  # the role of the message holding it
    seq: int  # that message's place in its session
    workspace: str  # the workspace its session ran in


# --- reading proposal files --------------------------------------------------------------------


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(data: bytes | str) -> dict[str, Any]:
    """A JSON object from `data`, refusing what lenient parsers accept; RuleFailed otherwise."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > MAX_PROPOSAL_BYTES:
        raise RuleFailed(Rule.PROPOSAL_TOO_LARGE, f"the proposal is {len(raw)} bytes; at most {MAX_PROPOSAL_BYTES} "
                                                  "bytes are accepted. Shorten the procedure")
    try:
        text = raw.decode("utf-8")
        bounded_json.check(text)  # the model's text: a deep one would recurse in the parser
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise RuleFailed(Rule.PROPOSAL_NOT_JSON, "the proposal is not UTF-8 text") from None
    except ValueError as exc:
        raise RuleFailed(Rule.PROPOSAL_NOT_JSON, f"the proposal is not strict JSON: {exc}") from None
    if not isinstance(value, dict):
        raise RuleFailed(Rule.PROPOSAL_NOT_JSON, "the proposal must be a JSON object")
    return value


def _invalid(exc: ValidationError) -> RuleFailed:
    problems = []
    for error in exc.errors(include_url=False)[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        problems.append(f"`{where}`: {error['msg']}")
    return RuleFailed(Rule.PROPOSAL_INVALID, "the proposal does not have the expected fields: " + "; ".join(problems))


def parse_proposal(data: bytes | str) -> Proposal:
    value = strict_json(data)
    if "name" in value:
        check_name(value["name"])
    try:
        return Proposal.model_validate(value)
    except ValidationError as exc:
        raise _invalid(exc) from None


def parse_validation(data: bytes | str) -> ValidationProposal:
    value = strict_json(data)
    if value.get("name") is not None:
        check_name(value["name"])
    # A full proposal file may be reused: only its name and evidence matter here.
    value = {k: v for k, v in value.items() if k not in ("description", "applicability", "procedure")}
    try:
        return ValidationProposal.model_validate(value)
    except ValidationError as exc:
        raise _invalid(exc) from None
