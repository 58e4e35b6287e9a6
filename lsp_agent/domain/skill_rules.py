"""The rules a skill candidate must pass, by name: every refusal says which one failed.

A refusal is an expected outcome (CLI exit 1, `ok: false` over JSON-RPC), not a crash, so it is an
exception only inside the skills package; the service turns it into an Outcome.
"""

from __future__ import annotations

import re
from enum import StrEnum


class Rule(StrEnum):
    # the proposal file
    PROPOSAL_TOO_LARGE = "proposal_too_large"
    PROPOSAL_NOT_JSON = "proposal_not_json"
    PROPOSAL_INVALID = "proposal_invalid"
    BAD_NAME = "bad_name"
    # the candidate record
    UNKNOWN_CANDIDATE = "unknown_candidate"
    NAME_TAKEN = "name_taken"
    LOCKED = "locked"
    WRONG_STATE = "wrong_state"
    NOT_VALIDATED = "not_validated"
    # picking the evidence from a session (--from-session)
    UNKNOWN_SESSION = "unknown_session"
    NO_VERIFICATION = "no_verification"
    # the cited part
    PART_MISSING = "part_missing"
    CITATION_MISMATCH = "citation_mismatch"
    OTHER_WORKSPACE = "other_workspace"
    REVERTED = "reverted"
    COMPACTED = "compacted"
    NOT_TOOL_RESULT = "not_tool_result"
    NOT_VERIFY_PROJECT = "not_verify_project"
    NOT_HARNESS_RESULT = "not_harness_result"
    # the envelope it carries
    ENVELOPE_INVALID = "envelope_invalid"
    ENVELOPE_INCONSISTENT = "envelope_inconsistent"
    NOT_PASSED = "not_passed"
    CHECK_FAILED = "check_failed"
    NOTHING_EXECUTED = "nothing_executed"
    NOT_GIT = "not_git"
    NOT_CLEAN_AT_VERIFY = "not_clean_at_verify"
    # the workspace now
    REVISION_MOVED = "revision_moved"
    DIRTY_TREE = "dirty_tree"
    SOURCES_CHANGED = "sources_changed"
    FINGERPRINT_FAILED = "fingerprint_failed"
    # validation
    SAME_SESSION = "same_session"
    REVISION_MISMATCH = "revision_mismatch"
    SOURCE_CHANGED = "source_changed"
    # the skill file
    SYMLINK = "symlink"
    NOT_A_DIRECTORY = "not_a_directory"
    SKILL_EXISTS = "skill_exists"
    SKILL_MODIFIED = "skill_modified"
    IO_ERROR = "io_error"


class RuleFailed(Exception):
    def __init__(self, rule: Rule, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message

    def prefixed(self, what: str) -> RuleFailed:
        """The same rule, saying which citation it was about (source or validation evidence)."""
        return RuleFailed(self.rule, f"{what}: {self.message}")

    def __str__(self) -> str:
        return f"{self.rule.value}: {self.message}"


# --- names ------------------------------------------------------------------------------------

#: A skill name is a directory name under .lsp-agent/skills/: lowercase words joined by hyphens.
MAX_NAME_CHARS = 64
NAME_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$"
_NAME = re.compile(NAME_PATTERN)


def check_name(name: object) -> str:
    """The name, or RuleFailed(bad_name) saying what is wrong with it."""
    if not isinstance(name, str):
        raise RuleFailed(Rule.BAD_NAME, "the name must be a string")
    if not name:
        raise RuleFailed(Rule.BAD_NAME, "the name is empty; use lowercase letters, digits and hyphens")
    if len(name) > MAX_NAME_CHARS:
        raise RuleFailed(Rule.BAD_NAME, f"the name is {len(name)} characters long; at most {MAX_NAME_CHARS}")
    if not _NAME.fullmatch(name):
        raise RuleFailed(Rule.BAD_NAME, f"{name!r} is not a skill name: use lowercase letters, digits and "
                                        "hyphens (not at the start or end), e.g. 'run-migrations'")
    return name
