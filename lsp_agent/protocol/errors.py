"""JSON-RPC errors of the agent/* methods: documented codes, and `data: {kind, status, field?, owner?}`.

| code   | status | kinds                                   | when                                      |
|--------|--------|-----------------------------------------|-------------------------------------------|
| -32602 | 400    | invalid_params, not_steerable,          | wrong type, unknown or missing field; a   |
|        |        | trust_changed, attachment_refused       | queued row that cannot be steered; a trust|
|        |        |                                         | hash the files no longer have; an         |
|        |        |                                         | attachment agent/run cannot send          |
| -32602 | 413    | too_large                               | a field is over its documented limit      |
| -32004 | 404    | unknown_session, unknown_message,       | the ID does not exist in this workspace   |
|        |        | not_found, checkpoint_folded            | (or its checkpoint was folded away)       |
| -32009 | 409    | busy, session_busy, conflict,           | the session already runs a generation (in |
|        |        | steer_conflict                          | this process, or in another: `data.owner`)|
|        |        |                                         | a queued row changed; a clientID reused   |
| -32010 | 503    | config, provider_error,                 | no usable model/provider in the settings; |
|        |        | store_unavailable,                      | the session store refused the write       |
|        |        | checkpoint_unavailable, not_initialized | or the server has not finished starting   |
| -32603 | 500    | internal                                | a bug; the server keeps serving           |

`-32601` (method not found) comes from the JSON-RPC layer for unknown methods.
The table is also rendered into docs/protocol.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from lsp_agent.core.errors import AgentError, AgentErrorKind
from lsp_agent.core.queue import MAX_STEER_CHARS
from lsp_agent.protocol.models import ErrorData, SessionOwner


@dataclass(frozen=True)
class ErrorCode:
    code: int
    name: str
    status: int
    kinds: tuple[str, ...]
    meaning: str


INVALID_PARAMS = ErrorCode(-32602, "InvalidParams", 400, ("invalid_params", "not_steerable", "trust_changed",
                                                          "attachment_refused"),
                           "A field has the wrong type, is unknown, or is missing; `data.field` names it. "
                           "`not_steerable`: agent/queue/steer of a row with attachments, of another kind, "
                           f"settled, or over `limits.steer_chars` (default {MAX_STEER_CHARS:,}) characters. "
                           "`trust_changed`: "
                           "agent/workspaceTrust `trust` with a hash the workspace's files no longer have. "
                           "`attachment_refused`: agent/run with an attachment the model cannot take (a kind "
                           "other than `text`/`file`, a malformed one) or a prompt that with its attachments "
                           "is over 200,000 characters; nothing was started.")
TOO_LARGE = ErrorCode(-32602, "InvalidParams", 413, ("too_large",),
                      "A field is over its documented limit (e.g. a prompt over 200,000 characters).")
NOT_FOUND = ErrorCode(-32004, "NotFound", 404, ("unknown_session", "unknown_message", "not_found",
                                               "checkpoint_folded"),
                      "The session, message or queued item (`not_found`) does not exist in this workspace. "
                      "`checkpoint_folded`: agent/rewind to a step whose checkpoint retention folded away.")
CONFLICT = ErrorCode(-32009, "Conflict", 409, ("busy", "session_busy", "conflict", "steer_conflict",
                                               "compaction_in_progress"),
                     "`busy`: the session is already running a generation (wait, cancel, steer or queue). "
                     "`session_busy`: another lsp-agent process (another editor window, the CLI) is writing "
                     "the session; it can be read, and run again once that process is done with it "
                     "(`data.owner` names its pid and host). "
                     "`conflict`: a queued row changed under the request (refresh with agent/queue/list and "
                     "retry). `steer_conflict`: the clientID was used for a different correction. "
                     "`compaction_in_progress`: agent/compact while another compaction of the session runs.")
UNAVAILABLE = ErrorCode(-32010, "Unavailable", 503, ("config", "provider_error", "store_unavailable",
                                                     "checkpoint_unavailable", "not_initialized"),
                        "The settings name no usable model/provider (`config`; the server said why), or the "
                        "model failed while writing a compaction or handoff summary (`provider_error`), or the "
                        "session store refused the write (`store_unavailable`; the message names the reason: "
                        "read_only, full, corrupt, locked, missing or io) — nothing of the request was accepted. "
                        "`checkpoint_unavailable`: agent/rewind could not read the workspace or the checkpoint "
                        "store (nothing was restored). `not_initialized`: a request before `initialize` finished "
                        "setting up the workspace (or after that setup failed: the message says why); retry "
                        "once the server is ready.")
INTERNAL = ErrorCode(-32603, "InternalError", 500, ("internal",),
                     "A bug in the server; the request failed but the server keeps serving.")

CODES = (INVALID_PARAMS, TOO_LARGE, NOT_FOUND, CONFLICT, UNAVAILABLE, INTERNAL)
#: each kind of core refusal and its documented code (the table above); every kind has one
CORE_CODES: dict[AgentErrorKind, ErrorCode] = {
    kind: next(c for c in CODES if kind.value in c.kinds) for kind in AgentErrorKind}


class ProtocolError(Exception):
    """An error answer to a request; the server turns it into a JSON-RPC error response."""

    def __init__(self, code: ErrorCode, message: str, kind: str | None = None, field: str | None = None,
                 owner: SessionOwner | None = None) -> None:
        super().__init__(message)
        self.code = code.code
        self.message = message
        self.data = ErrorData(kind=kind or code.kinds[0], status=code.status, field=field, owner=owner)

    def wire_data(self) -> dict[str, object]:
        return self.data.wire()


_UNION_TAGS = frozenset({"int", "str", "float", "bool", "list", "dict", "none"})


def _field(loc: tuple[int | str, ...]) -> str | None:
    # A union's errors carry the member tried (`constrained-int`, `str`) in `loc`: not a field.
    parts = [str(p) for i, p in enumerate(loc)
             if not (isinstance(p, str) and i > 0 and ("-" in p or "[" in p or p in _UNION_TAGS))]
    return ".".join(parts) or None


def invalid_params(exc: ValidationError, method: str) -> ProtocolError:
    """The first problem of a failed params validation, with the offending field named."""
    first = exc.errors(include_url=False)[0]
    field = _field(tuple(first["loc"]))
    kind = first["type"]
    if kind in ("string_too_long", "too_long"):
        limit = (first.get("ctx") or {}).get("max_length")
        return ProtocolError(TOO_LARGE, f"{method}: `{field}` is too large (limit {limit})", field=field)
    if kind == "extra_forbidden":
        return ProtocolError(INVALID_PARAMS, f"{method}: unknown field `{field}`", field=field)
    if kind == "missing":
        return ProtocolError(INVALID_PARAMS, f"{method}: missing field `{field}`", field=field)
    where = f"`{field}`: " if field else "params: "
    return ProtocolError(INVALID_PARAMS, f"{method}: {where}{first['msg']}", field=field)


def from_core(error: AgentError) -> ProtocolError:
    """A core refusal as the documented JSON-RPC error of its kind."""
    owner = SessionOwner(pid=error.holder.pid, host=error.holder.host) if error.holder is not None else None
    return ProtocolError(CORE_CODES[error.kind], error.message, kind=error.kind.value, owner=owner)


def status_of(error: AgentError) -> int:
    """The HTTP-like status of a core refusal (`data.status` on the wire)."""
    return CORE_CODES[error.kind].status


def describe_codes() -> list[dict[str, Any]]:
    return [{"code": c.code, "name": c.name, "status": c.status, "kinds": list(c.kinds), "meaning": c.meaning}
            for c in CODES]
