"""Skill candidates on the wire: the agent/skill/* methods, their commands and models.

A refused operation is not a JSON-RPC error: it is a result with `ok: false` and the `rule` that
failed (the CLI exits 1 for the same outcome). JSON-RPC errors are kept for malformed params.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from lsp_agent.domain.skill_records import MAX_PROPOSAL_BYTES, State
from lsp_agent.domain.skill_rules import Rule
from lsp_agent.protocol.models import Params, Result, SessionID

# client → server requests
AGENT_SKILL_PROPOSE = "agent/skill/propose"
AGENT_SKILL_SHOW = "agent/skill/show"
AGENT_SKILL_VALIDATE = "agent/skill/validate"
AGENT_SKILL_PROMOTE = "agent/skill/promote"
AGENT_SKILL_RETIRE = "agent/skill/retire"
AGENT_SKILL_LIST = "agent/skill/list"
# server → client notification
AGENT_SKILL_CHANGED = "agent/skill/changed"
# workspace/executeCommand commands (offered by code actions, or run from the client's palette)
COMMAND_SKILL_DRAFT = "lsp-agent.skill.draft"
COMMAND_SKILL_PROPOSE = "lsp-agent.skill.propose"
COMMAND_SKILL_VALIDATE = "lsp-agent.skill.validate"
COMMAND_SKILL_PROMOTE = "lsp-agent.skill.promote"
SKILL_COMMANDS = (COMMAND_SKILL_DRAFT, COMMAND_SKILL_PROPOSE, COMMAND_SKILL_VALIDATE, COMMAND_SKILL_PROMOTE)
#: URI scheme of the editor's read-only candidate view: `lsp-agent-skill:NAME` (or `…:/NAME.md`).
CANDIDATE_VIEW_SCHEME = "lsp-agent-skill"

#: Transport bound on an inline proposal; the proposal rule itself is MAX_PROPOSAL_BYTES.
MAX_INLINE_CHARS = 1_000_000
CandidateName = Annotated[str, Field(max_length=200, description="The candidate's name (lowercase letters, digits, "
                                                                  "hyphens; at most 64).")]


# --- params -----------------------------------------------------------------------------------


class ProposeParams(Params):
    """The proposal JSON, given inline (`text`) or as a document (`uri`): exactly one of them."""

    text: str | None = Field(None, max_length=MAX_INLINE_CHARS,
                             description=f"The proposal file's text: strict JSON, at most {MAX_PROPOSAL_BYTES} "
                                         "bytes, with name, description, applicability, procedure and evidence "
                                         "{sessionID, messageID, partID}.")
    uri: str | None = Field(None, min_length=1, max_length=4096,
                            description="A file URI of the proposal: its open document's text, else the file.")

    @model_validator(mode="after")
    def _one_source(self) -> ProposeParams:
        if (self.text is None) == (self.uri is None):
            raise ValueError("give exactly one of `text` and `uri`")
        return self


class ValidateParams(ProposeParams):
    """The independent evidence: a file with `evidence` (and optionally `name`) citing a passing
    verify_project result of another session at the same revision."""

    name: CandidateName


class NameParams(Params):
    name: CandidateName


class ListParams(Params):
    """No fields; params may be omitted."""


class DraftParams(Params):
    """Start a proposal (or, with `name`, a validation) from a verify_project result in the transcript."""

    session_id: SessionID
    message_id: str = Field(min_length=1, max_length=200, description="The message holding the result.")
    part_id: str = Field(min_length=1, max_length=200, description="The verify_project tool-result part.")
    name: str | None = Field(None, max_length=200,
                             description="Draft a validation of this candidate instead of a new proposal.")


# --- results ----------------------------------------------------------------------------------


class EvidenceOut(Result):
    """A citation that passed the evidence rules, with what was seen when it did."""

    session_id: str
    message_id: str
    part_id: str
    digest: str = Field(description="sha256 of the stored part; a later change breaks the citation.")
    revision: str = Field(description="The Git revision the verification ran at.")
    fingerprint: str = Field(description="The source digest the verification took before running.")


class CandidateOut(Result):
    name: str
    state: State = Field(description="pending → active (promoted); retiring → retired.")
    validated: bool = Field(description="True once independent evidence from another session was recorded.")
    description: str
    applicability: str
    procedure: str
    source: EvidenceOut
    validation: EvidenceOut | None = None
    skill_path: str | None = Field(None, description="Workspace-relative SKILL.md, once promoted.")
    skill_hash: str | None = Field(None, description="sha256 of the SKILL.md promotion wrote.")
    created_at: int
    updated_at: int
    validated_at: int | None = None
    promoted_at: int | None = None
    retired_at: int | None = None


class SkillResult(Result):
    """The outcome of a skill operation: `ok`, or the `rule` that failed and why."""

    ok: bool
    rule: Rule | None = Field(None, description="The rule that failed (when `ok` is false).")
    message: str = Field(description="What happened, or exactly which rule failed and what to do.")
    changed: bool = Field(description="False when the operation had nothing left to do (e.g. retired twice).")
    candidate: CandidateOut | None = None
    path: str | None = Field(None, description="The skill's SKILL.md, workspace-relative (promote, retire).")
    uri: str | None = Field(None, description="The same file as a file URI (promote).")
    view: str | None = Field(None, description="show: the candidate as a Markdown page (the candidate view).")


class SkillOut(Result):
    name: str
    description: str
    path: str = Field(description="Workspace-relative SKILL.md.")


class SkillListResult(Result):
    candidates: list[CandidateOut] = Field(description="Every candidate of the workspace, by name.")
    skills: list[SkillOut] = Field(description="The skills the agent sees now (promoted and hand-written), by name.")


class SkillChangedParams(Result):
    """The skills folder changed: the list the agent's next request will carry."""

    skills: list[SkillOut]


class DraftResult(Result):
    ok: bool
    rule: Rule | None = None
    message: str
    path: str | None = Field(None, description="The draft file (outside the worktree, in the state directory).")
    uri: str | None = None


# --- documentation (rendered into docs/protocol.md by protocol/schema.py) -------------------------

Kind = Literal["request", "notification", "command"]
_C2S = "client → server"
_CMD = "client → server (workspace/executeCommand)"

METHOD_DOCS: tuple[tuple[str, Kind, str, type[BaseModel], type[BaseModel] | None, str], ...] = (
    (AGENT_SKILL_PROPOSE, "request", _C2S, ProposeParams, SkillResult,
     "Create a pending skill candidate from a proposal. Its evidence must cite this workspace's own, "
     "passing verify_project result (at least one executed test or type check, every check exit 0) at the "
     "current clean revision with the same source fingerprint. A refusal is `ok: false` with the `rule`."),
    (AGENT_SKILL_SHOW, "request", _C2S, NameParams, SkillResult,
     "One candidate, with `view`: the candidate as Markdown (the client's candidate view)."),
    (AGENT_SKILL_VALIDATE, "request", _C2S, ValidateParams, SkillResult,
     "Record independent evidence: a passing verify_project result from another session at the same "
     "revision. The source evidence is checked again (and must be unchanged)."),
    (AGENT_SKILL_PROMOTE, "request", _C2S, NameParams, SkillResult,
     "Re-check both citations, then write `.lsp-agent/skills/NAME/SKILL.md` (never overwriting; symlinked "
     "folders refused). Promoting an active candidate again is a no-op (`changed: false`); a promotion "
     "interrupted after the write is finished."),
    (AGENT_SKILL_RETIRE, "request", _C2S, NameParams, SkillResult,
     "Remove the candidate's own SKILL.md (only a regular, single-link file with the hash promotion wrote; "
     "a hand-edited file is a conflict, rule `skill_modified`, and stays). Retiring twice is a no-op."),
    (AGENT_SKILL_LIST, "request", _C2S, ListParams, SkillListResult,
     "Every candidate, and the skills the agent currently sees. Params may be omitted."),
    (AGENT_SKILL_CHANGED, "notification", "server → client", SkillChangedParams, None,
     "The skills folder changed (watched live): the list the agent's next request carries."),
    (COMMAND_SKILL_DRAFT, "command", _CMD, DraftParams, DraftResult,
     "\"Propose skill from this verification\" / \"Validate\" on a verify_project result: checks the "
     "evidence, writes a proposal (or validation) draft outside the worktree and opens it "
     "(`window/showDocument`). `arguments` is `[DraftParams]`."),
    (COMMAND_SKILL_PROPOSE, "command", _CMD, ProposeParams, SkillResult,
     "Code action \"Propose skill candidate NAME\" in an open proposal JSON. `arguments` is `[ProposeParams]`."),
    (COMMAND_SKILL_VALIDATE, "command", _CMD, ValidateParams, SkillResult,
     "Code action \"Validate skill candidate NAME\" in an open file citing another session's verification. "
     "`arguments` is `[ValidateParams]`."),
    (COMMAND_SKILL_PROMOTE, "command", _CMD, NameParams, SkillResult,
     "Code action \"Promote skill candidate NAME\", offered only while promotion would succeed (in the "
     "candidate's proposal JSON or candidate view); the new SKILL.md is then opened with "
     "`window/showDocument`. `arguments` is `[NameParams]`."),
)

NESTED_MODELS: tuple[type[BaseModel], ...] = (CandidateOut, EvidenceOut, SkillOut)
