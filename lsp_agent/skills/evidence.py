"""The evidence rules shared by propose, validate and promote: one statement of them, so no path to
promotion checks less (see "Skill candidates need the harness's own evidence" in docs/decisions.md).

A citation is evidence only when it points at the harness's own, completed verify_project result
in this workspace — not text, not another tool, not a part marked reverted or compacted, nor one a
compaction summary replaced (outside the conversation's current view) — whose
envelope, re-derived from its checks, passed with at least one executed test or type check, at a
clean revision that is still the current one with the same source digest. Nothing is taken from
the model's words or from the part's top-level flags: only the stored envelope counts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from lsp_agent.context.view import model_view
from lsp_agent.domain.history import Part, Role, ToolResultPart
from lsp_agent.domain.skill_records import Citation, Evidence
from lsp_agent.domain.skill_rules import Rule, RuleFailed
from lsp_agent.skills.port import SkillStore
from lsp_agent.tools.fingerprint import FingerprintError, source_fingerprint
from lsp_agent.tools.verify_envelope import VerifyEnvelope, envelope_status

VERIFY_TOOL = "verify_project"
EVIDENCE_KINDS = ("test", "typecheck")
#: Part metadata flags that take a part out of the record (revert, compaction).
REVERTED_FLAG = "reverted"
COMPACTED_FLAG = "compacted"
GIT_TIMEOUT_S = 60.0

_PART = TypeAdapter[Part](Part)


def part_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def cited_result(store: SkillStore, root: Path, citation: Citation) -> tuple[ToolResultPart, str]:
    """The cited verify_project result and the digest of its stored form, or RuleFailed."""
    stored = store.stored_part(citation.part_id)
    if stored is None:
        raise RuleFailed(Rule.PART_MISSING, f"no stored part {citation.part_id!r}: cite the part ID of a "
                                            "verify_project result (agent/session lists them)")
    if stored.session_id != citation.session_id or stored.message_id != citation.message_id:
        raise RuleFailed(Rule.CITATION_MISMATCH, f"part {citation.part_id!r} belongs to session "
                                                 f"{stored.session_id!r}, message {stored.message_id!r}, not to "
                                                 "the session and message cited")
    if stored.workspace != str(root.resolve()):
        raise RuleFailed(Rule.OTHER_WORKSPACE, f"part {citation.part_id!r} was recorded in another workspace; "
                                               "cite a verification of this one")
    try:
        part = _PART.validate_json(stored.data)
    except ValidationError:
        raise RuleFailed(Rule.ENVELOPE_INVALID, f"part {citation.part_id!r} cannot be read back") from None
    metadata: dict[str, Any] = getattr(part, "metadata", {})
    if metadata.get(REVERTED_FLAG):
        raise RuleFailed(Rule.REVERTED, f"part {citation.part_id!r} was reverted; cite a verification that is "
                                        "still part of the record")
    if metadata.get(COMPACTED_FLAG):
        raise RuleFailed(Rule.COMPACTED, f"part {citation.part_id!r} was compacted away; cite a verification "
                                         "that is still in the record")
    if not isinstance(part, ToolResultPart):
        raise RuleFailed(Rule.NOT_TOOL_RESULT, f"part {citation.part_id!r} is a {part.type} part, not a tool "
                                               "result: a sentence of success is not evidence; cite a "
                                               "verify_project result")
    if part.name != VERIFY_TOOL:
        raise RuleFailed(Rule.NOT_VERIFY_PROJECT, f"part {citation.part_id!r} is the result of {part.name}, not "
                                                  "verify_project: only the harness's own checks count")
    if stored.role is not Role.TOOL or not _has_call(store, citation.session_id, part.call_id, stored.seq):
        raise RuleFailed(Rule.NOT_HARNESS_RESULT, f"part {citation.part_id!r} is not the result of a "
                                                  "verify_project call the harness ran in this session")
    if citation.message_id not in {m.id for m in model_view(store.messages(citation.session_id))}:
        raise RuleFailed(Rule.COMPACTED, f"part {citation.part_id!r} was compacted away (a compaction summary "
                                         "replaced it); cite a verification that is still in the conversation")
    return part, part_digest(stored.data)


def latest_passing(store: SkillStore, root: Path, session_id: str) -> Citation:
    """The citation of the session's latest verify_project result that says it passed (still in the
    conversation, not reverted): what `--from-session` cites. Every evidence rule is checked after,
    as for a citation typed by hand — a forged or stale result is refused, not skipped."""
    row = store.session(session_id)
    if row is None:
        raise RuleFailed(Rule.UNKNOWN_SESSION, f"no session {session_id!r} in this workspace's store (the "
                                               "`sessionID` of a run's run_finish, or its stop line)")
    if row.workspace != str(root.resolve()):
        raise RuleFailed(Rule.OTHER_WORKSPACE, f"session {session_id!r} ran in another workspace")
    for message in reversed(model_view(store.messages(session_id))):
        if message.role is not Role.TOOL:
            continue
        for part in reversed(message.tool_results()):
            envelope = part.metadata.get("envelope")
            if (part.name == VERIFY_TOOL and isinstance(envelope, dict) and envelope.get("status") == "passed"
                    and not part.metadata.get(REVERTED_FLAG) and not part.metadata.get(COMPACTED_FLAG)):
                return Citation(session_id=session_id, message_id=message.id, part_id=part.id)
    raise RuleFailed(Rule.NO_VERIFICATION, f"session {session_id!r} has no passing verify_project result in its "
                                           "conversation; run verify_project there (or in another session) first")


def _has_call(store: SkillStore, session_id: str, call_id: str, before_seq: int) -> bool:
    return any(call.call_id == call_id and call.name == VERIFY_TOOL
               for call in store.tool_calls_before(session_id, before_seq))


def passing_envelope(part: ToolResultPart) -> VerifyEnvelope:
    """The part's envelope if it is evidence of a pass at a clean revision; RuleFailed otherwise."""
    raw = part.metadata.get("envelope")
    try:
        envelope = VerifyEnvelope.model_validate(raw)
    except ValidationError:
        raise RuleFailed(Rule.ENVELOPE_INVALID, "the cited result carries no readable verify envelope") from None
    recomputed = envelope_status(envelope.checks, envelope.error)
    if recomputed != envelope.status:
        raise RuleFailed(Rule.ENVELOPE_INCONSISTENT, f"the envelope says {envelope.status} but its checks say "
                                                     f"{recomputed}: the record was altered")
    if envelope.status != "passed":
        why = f" ({envelope.error})" if envelope.error else ""
        raise RuleFailed(Rule.NOT_PASSED, f"the cited verification {envelope.status}{why}; cite one that passed")
    evidence = [c for c in envelope.checks if c.kind in EVIDENCE_KINDS and c.executed]
    if not evidence:
        raise RuleFailed(Rule.NOTHING_EXECUTED, "no test or type check executed in the cited verification "
                                                "(all skipped, nothing collected, or only lint ran)")
    for check in evidence:
        if check.exit_code != 0 or check.signal is not None or check.timed_out:
            raise RuleFailed(Rule.CHECK_FAILED, f"the {check.kind} check did not exit 0 cleanly (exit="
                                                f"{check.exit_code}, signal={check.signal}, "
                                                f"timed out={check.timed_out})")
    if envelope.revision is None:
        raise RuleFailed(Rule.NOT_GIT, "the cited verification ran outside Git (or before the first commit)")
    if envelope.clean is not True:
        raise RuleFailed(Rule.NOT_CLEAN_AT_VERIFY, "the cited verification ran on a working tree with "
                                                   "uncommitted changes; commit, then verify again")
    if not envelope.fingerprint:
        raise RuleFailed(Rule.ENVELOPE_INVALID, "the cited verification has no source fingerprint")
    return envelope


async def workspace_state(root: Path, exclude: Iterable[str] = ()) -> tuple[str | None, bool | None, str]:
    """(revision, clean, digest) now, as verify_project computes them. `exclude`: workspace paths left
    out of both (a skill file this candidate's own interrupted promotion already wrote)."""
    return await source_fingerprint(root, GIT_TIMEOUT_S, exclude)


async def check_current(root: Path, envelope: VerifyEnvelope, exclude: Iterable[str] = ()) -> None:
    """The cited revision and source digest are the workspace's now, and the tree is clean."""
    try:
        revision, clean, digest = await workspace_state(root, exclude)
    except (FingerprintError, OSError) as exc:
        raise RuleFailed(Rule.FINGERPRINT_FAILED, f"could not fingerprint the workspace: {exc}") from None
    if revision is None:
        raise RuleFailed(Rule.NOT_GIT, "the workspace is not a Git repository with a commit")
    if revision != envelope.revision:
        cited = (envelope.revision or "?")[:12]
        raise RuleFailed(Rule.REVISION_MOVED, f"the cited verification ran at {cited} but HEAD is now "
                                              f"{revision[:12]}; verify again at this revision")
    if not clean:
        raise RuleFailed(Rule.DIRTY_TREE, "the working tree has uncommitted changes (`git status --porcelain` is "
                                          "not empty); commit or stash them, or keep proposal files in an ignored "
                                          "folder or outside the worktree")
    if digest != envelope.fingerprint:
        raise RuleFailed(Rule.SOURCES_CHANGED, "the sources differ from those the cited verification "
                                               "fingerprinted; verify again")


async def check_evidence(store: SkillStore, root: Path, citation: Citation, exclude: Iterable[str] = ()) -> Evidence:
    """Every rule, in order; the Evidence to record, or RuleFailed naming the first rule broken."""
    part, digest = cited_result(store, root, citation)
    envelope = passing_envelope(part)
    await check_current(root, envelope, exclude)
    assert envelope.revision is not None  # passing_envelope checked it
    return Evidence(session_id=citation.session_id, message_id=citation.message_id, part_id=citation.part_id,
                    digest=digest, revision=envelope.revision, fingerprint=envelope.fingerprint)
