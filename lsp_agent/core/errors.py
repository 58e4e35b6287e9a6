"""Refusals the core reports to any front end, each of a typed kind. How a kind is spelled on a
wire (a JSON-RPC code, an HTTP-like status) is the front end's business: `lsp_agent/protocol/errors.py`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class AgentErrorKind(StrEnum):
    # the request itself is wrong
    INVALID_PARAMS = "invalid_params"
    NOT_STEERABLE = "not_steerable"
    ATTACHMENT_REFUSED = "attachment_refused"
    # what it names does not exist
    NOT_FOUND = "not_found"
    UNKNOWN_SESSION = "unknown_session"
    UNKNOWN_MESSAGE = "unknown_message"
    # the state it needs has changed or is taken
    BUSY = "busy"
    SESSION_BUSY = "session_busy"
    CONFLICT = "conflict"
    STEER_CONFLICT = "steer_conflict"
    COMPACTION_IN_PROGRESS = "compaction_in_progress"
    # the model could not be used
    PROVIDER_ERROR = "provider_error"
    # the session store cannot be used (its reason says why: read_only, full, corrupt, locked, missing, io)
    STORE_UNAVAILABLE = "store_unavailable"


@dataclass(frozen=True)
class Holder:
    """The other process a `session_busy` refusal names (what its identity says; None: not known)."""

    pid: int | None
    host: str | None


class AgentError(Exception):
    def __init__(self, kind: AgentErrorKind, message: str, holder: Holder | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.holder = holder


K = AgentErrorKind


def invalid(message: str, kind: AgentErrorKind = K.INVALID_PARAMS) -> AgentError:
    return AgentError(kind, message)


def conflict(message: str, kind: AgentErrorKind = K.CONFLICT) -> AgentError:
    return AgentError(kind, message)


def not_found(message: str, kind: AgentErrorKind = K.NOT_FOUND) -> AgentError:
    return AgentError(kind, message)
