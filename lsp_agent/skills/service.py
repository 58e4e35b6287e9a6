"""The skill candidate operations every front end calls: propose, validate, promote, retire, show,
list. A refusal is an Outcome naming the rule that failed, never an exception: every front end shows
the same reason, and the CLI turns it into exit status 1.

Each operation that changes a candidate holds the candidate's lock for its whole duration, checks
the evidence again right before it acts, and changes the state with one guarded write.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lsp_agent.domain.skill_records import (
    Candidate,
    Citation,
    Evidence,
    State,
    parse_proposal,
    parse_validation,
    strict_json,
)
from lsp_agent.domain.skill_rules import Rule, RuleFailed, check_name
from lsp_agent.skills.candidates import CandidateStore, now_ms
from lsp_agent.skills.discovery import index_for
from lsp_agent.skills.evidence import check_evidence, latest_passing
from lsp_agent.skills.files import sha256, skill_rel
from lsp_agent.skills.port import SkillStore
from lsp_agent.skills.promote import existing_skill, render_skill, write_skill
from lsp_agent.skills.retire import Removal, check_removable, remove_skill
from lsp_agent.tools.fingerprint import FingerprintError

_IGNORED_FOR_PENDING = (Rule.SKILL_MODIFIED, Rule.SYMLINK, Rule.NOT_A_DIRECTORY)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    message: str
    rule: Rule | None = None
    candidate: Candidate | None = None
    path: str | None = None  # the SKILL.md, workspace-relative (promote, retire)
    changed: bool = True  # False for a repeated promote/retire that had nothing left to do

    def line(self) -> str:
        if self.ok:
            return f"OK: {self.message}"
        return f"ERROR: {self.rule.value if self.rule else 'failed'}: {self.message}"


def _short(evidence: Evidence) -> str:
    return f"part {evidence.part_id} (session {evidence.session_id}) at {evidence.revision[:12]}"


class SkillService:
    def __init__(self, store: SkillStore, root: Path) -> None:
        self.root = root.resolve()
        self.store = store
        self.records = CandidateStore(store, self.root)

    async def _outcome(self, body: Callable[[], Awaitable[Outcome]]) -> Outcome:
        try:
            return await body()
        except RuleFailed as failed:
            return Outcome(False, failed.message, failed.rule)
        except (OSError, FingerprintError) as exc:
            return Outcome(False, f"file system error: {exc}", Rule.IO_ERROR)

    def _candidate(self, name: str) -> Candidate:
        candidate = self.records.get(check_name(name))
        if candidate is None:
            raise RuleFailed(Rule.UNKNOWN_CANDIDATE, f"no skill candidate named {name!r}; `list` shows them")
        return candidate

    async def _holds(self, what: str, recorded: Evidence, exclude: tuple[str, ...] = ()) -> None:
        """A recorded citation still passes every rule, and the cited part is unchanged."""
        try:
            now = await check_evidence(self.store, self.root, recorded.citation(), exclude)
        except RuleFailed as failed:
            raise failed.prefixed(what) from None
        if now.digest != recorded.digest:
            raise RuleFailed(Rule.SOURCE_CHANGED, f"{what}: the cited part changed after it was recorded")

    # --- propose ------------------------------------------------------------------------------

    def _compose(self, data: bytes | str | None, fields: Mapping[str, str] | None,
                 from_session: str | None) -> bytes | str:
        """The proposal to parse: the file (if any), fields given one by one over it, and the evidence
        picked from a session's latest passing verify_project result."""
        if not fields and from_session is None:
            return data if data is not None else b""
        value = strict_json(data) if data is not None else {}
        value.update(fields or {})
        if from_session is not None:
            if "evidence" in value:
                raise RuleFailed(Rule.PROPOSAL_INVALID, "the proposal already cites `evidence`; give it either in "
                                                        "the file or by session, not both")
            value["evidence"] = latest_passing(self.store, self.root, from_session).model_dump(by_alias=True)
        return json.dumps(value)

    async def propose(self, data: bytes | str | None, fields: Mapping[str, str] | None = None,
                      from_session: str | None = None) -> Outcome:
        """`data`: a proposal file; `fields` override its fields; `from_session` supplies its evidence."""
        async def body() -> Outcome:
            proposal = parse_proposal(self._compose(data, fields, from_session))
            with self.records.locked(proposal.name):
                existing = self.records.get(proposal.name)
                if existing is not None and existing.state is not State.RETIRED:
                    raise RuleFailed(Rule.NAME_TAKEN, f"a candidate named {proposal.name!r} already exists "
                                                      f"({existing.state.value}); pick another name")
                if existing_skill(self.root, proposal.name).exists:
                    raise RuleFailed(Rule.SKILL_EXISTS, f"{skill_rel(proposal.name)} already exists; pick "
                                                        "another name")
                try:
                    source = await check_evidence(self.store, self.root, proposal.evidence)
                except RuleFailed as failed:
                    raise failed.prefixed("source evidence") from None
                now = now_ms()
                candidate = Candidate(name=proposal.name, state=State.PENDING, description=proposal.description,
                                      applicability=proposal.applicability, procedure=proposal.procedure,
                                      source=source, created_at=now, updated_at=now)
                self.records.create(candidate)
            return Outcome(True, f"candidate {candidate.name} proposed (pending) on {_short(source)}; validate "
                                 "it with a passing verify_project from another session at this revision",
                           candidate=candidate)

        return await self._outcome(body)

    # --- validate -----------------------------------------------------------------------------

    async def validate(self, name: str, data: bytes | str | None, from_session: str | None = None) -> Outcome:
        async def body() -> Outcome:
            check_name(name)
            proposal = parse_validation(self._compose(data, None, from_session))
            if proposal.name is not None and proposal.name != name:
                raise RuleFailed(Rule.PROPOSAL_INVALID, f"the file names candidate {proposal.name!r}, not {name!r}")
            with self.records.locked(name):
                candidate = self._candidate(name)
                if candidate.state is not State.PENDING:
                    raise RuleFailed(Rule.WRONG_STATE, f"candidate {name!r} is {candidate.state.value}; only a "
                                                       "pending candidate is validated")
                if candidate.validation is not None:
                    raise RuleFailed(Rule.WRONG_STATE, f"candidate {name!r} is already validated by "
                                                       f"{_short(candidate.validation)}; promote it")
                if proposal.evidence.session_id == candidate.source.session_id:
                    raise RuleFailed(Rule.SAME_SESSION, "validation evidence: it comes from the session that "
                                                        "proposed the candidate; cite a verification from another "
                                                        "session")
                await self._holds("source evidence", candidate.source)
                try:
                    validation = await check_evidence(self.store, self.root, proposal.evidence)
                except RuleFailed as failed:
                    raise failed.prefixed("validation evidence") from None
                if validation.revision != candidate.source.revision:
                    raise RuleFailed(Rule.REVISION_MISMATCH, "validation evidence: it ran at another revision than "
                                                             "the source evidence")
                candidate = self.records.update(
                    candidate.model_copy(update={"validation": validation, "validated_at": now_ms()}),
                    (State.PENDING,))
            return Outcome(True, f"candidate {name} validated by {_short(validation)}; it can be promoted",
                           candidate=candidate)

        return await self._outcome(body)

    # --- promote ------------------------------------------------------------------------------

    async def _promotable(self, candidate: Candidate) -> tuple[bytes, bool]:
        """(content, resume): the checks promotion makes before writing, without writing."""
        if candidate.validation is None:
            raise RuleFailed(Rule.NOT_VALIDATED, f"candidate {candidate.name!r} is not validated yet: validate it "
                                                 "with evidence from another session first")
        data = render_skill(candidate)
        digest = sha256(data)
        rel = skill_rel(candidate.name)
        existing = existing_skill(self.root, candidate.name)
        resume = existing.exists and existing.regular and existing.links == 1 and existing.digest == digest
        if existing.exists and not resume:
            raise RuleFailed(Rule.SKILL_EXISTS, f"{rel} already exists and is never overwritten; retire this "
                                                "candidate and propose it under another name")
        # An interrupted promotion's own file is the one change the evidence may see.
        exclude = (rel,) if resume else ()
        await self._holds("source evidence", candidate.source, exclude)
        await self._holds("validation evidence", candidate.validation, exclude)
        return data, resume

    async def check_promotable(self, name: str) -> Outcome:
        """Whether `promote` would succeed now (code actions offer it only then); changes nothing."""
        async def body() -> Outcome:
            candidate = self._candidate(name)
            if candidate.state is not State.PENDING:
                raise RuleFailed(Rule.WRONG_STATE, f"candidate {name!r} is {candidate.state.value}")
            await self._promotable(candidate)
            return Outcome(True, f"candidate {name} can be promoted", candidate=candidate, changed=False)

        return await self._outcome(body)

    async def promote(self, name: str) -> Outcome:
        async def body() -> Outcome:
            with self.records.locked(check_name(name)):
                candidate = self._candidate(name)
                rel = skill_rel(name)
                if candidate.state is State.ACTIVE:
                    return Outcome(True, f"candidate {name} is already promoted ({rel})", candidate=candidate,
                                   path=rel, changed=False)
                if candidate.state is not State.PENDING:
                    raise RuleFailed(Rule.WRONG_STATE, f"candidate {name!r} is {candidate.state.value}; propose it "
                                                       "again to promote it")
                data, resume = await self._promotable(candidate)
                if not resume:
                    write_skill(self.root, name, data)
                candidate = self.records.update(
                    candidate.model_copy(update={"state": State.ACTIVE, "skill_hash": sha256(data),
                                                 "promoted_at": now_ms()}), (State.PENDING,))
            index_for(self.root).refresh()
            done = "finished the interrupted promotion of" if resume else "promoted"
            return Outcome(True, f"{done} {name}: {rel}", candidate=candidate, path=rel)

        return await self._outcome(body)

    # --- retire -------------------------------------------------------------------------------

    async def retire(self, name: str) -> Outcome:
        async def body() -> Outcome:
            with self.records.locked(check_name(name)):
                candidate = self._candidate(name)
                rel = skill_rel(name)
                if candidate.state is State.RETIRED:
                    return Outcome(True, f"candidate {name} is already retired", candidate=candidate,
                                   changed=False)
                expected = candidate.skill_hash or sha256(render_skill(candidate))
                removal = Removal.MISSING
                if candidate.state is State.PENDING:
                    try:  # only an interrupted promotion's own, unchanged file
                        removal = remove_skill(self.root, name, expected)
                    except RuleFailed as failed:
                        if failed.rule not in _IGNORED_FOR_PENDING:
                            raise
                else:
                    if candidate.state is State.ACTIVE:
                        check_removable(self.root, name, expected)  # a conflict leaves it active
                        candidate = self.records.update(candidate.model_copy(update={"state": State.RETIRING}),
                                                        (State.ACTIVE,))
                    try:
                        removal = remove_skill(self.root, name, expected)
                    except RuleFailed:
                        self.records.update(candidate.model_copy(update={"state": State.ACTIVE}), (State.RETIRING,))
                        raise
                candidate = self.records.update(
                    candidate.model_copy(update={"state": State.RETIRED, "retired_at": now_ms()}),
                    (State.PENDING, State.RETIRING))
            index_for(self.root).refresh()
            what = f"removed {rel}" if removal is Removal.REMOVED else "no skill file to remove"
            return Outcome(True, f"retired {name}: {what}", candidate=candidate, path=rel)

        return await self._outcome(body)

    # --- reading ------------------------------------------------------------------------------

    def show(self, name: str) -> Outcome:
        try:
            candidate = self._candidate(name)
        except RuleFailed as failed:
            return Outcome(False, failed.message, failed.rule)
        return Outcome(True, candidate_view(candidate), candidate=candidate, changed=False)

    def list(self) -> list[Candidate]:
        return self.records.all()

    async def draft(self, citation: Citation, name: str | None = None) -> Outcome:
        """A proposal (or, with `name`, a validation) file citing a verification, checked first."""
        async def body() -> Outcome:
            await check_evidence(self.store, self.root, citation)
            evidence = citation.model_dump(by_alias=True)
            if name is not None:
                self._candidate(name)
                draft = {"name": name, "evidence": evidence}
            else:
                draft = {"name": "", "description": "", "applicability": "", "procedure": "", "evidence": evidence}
            return Outcome(True, json.dumps(draft, indent=2) + "\n", changed=False)

        return await self._outcome(body)


def candidate_view(candidate: Candidate) -> str:
    """The candidate as a Markdown page (`show`, and the editor's candidate view)."""
    state = candidate.state.value + (" (validated)" if candidate.validated and candidate.state is State.PENDING
                                     else "")
    lines = [f"# Skill candidate {candidate.name}", "", f"State: {state}", "",
             f"Description: {candidate.description}", "", "## Applicability", "", candidate.applicability.strip(),
             "", "## Procedure", "", candidate.procedure.strip(), "", "## Evidence", "",
             f"- source: {_short(candidate.source)}, message {candidate.source.message_id}"]
    if candidate.validation is not None:
        lines.append(f"- validation: {_short(candidate.validation)}, message {candidate.validation.message_id}")
    else:
        lines.append("- validation: none yet")
    if candidate.state in (State.ACTIVE, State.RETIRING):
        lines.append(f"- skill file: {skill_rel(candidate.name)}")
    return "\n".join(lines) + "\n"
