"""Params and results of every custom method, as pydantic models (camelCase on the wire).

Params are strict (no coercion of "5" into 5) and closed (an unknown field is an error that
names it). Results are built by the server and validated by the tests against these models.
The JSON Schema and docs/protocol.md are generated from here (`lsp-agent schema`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from lsp_agent.domain.events import Event, VerificationStatus
from lsp_agent.domain.wire import WireModel

#: Longest prompt accepted by agent/run and the fix command, in characters. Longer context
#: belongs in files the agent reads, not in the request.
MAX_PROMPT_CHARS = 200_000
#: Page size bounds of agent/session and agent/sessions.
DEFAULT_PAGE = 100
MAX_PAGE = 500
#: Most attachments one message (agent/run, agent/queue/add) may carry.
MAX_ATTACHMENTS = 32
#: What a message may carry besides its text (core/attachments.py sends them).
ATTACHMENTS_DOC = ("Sent after the text, each under a numbered header: `{\"type\": \"text\", \"text\": ..., "
                   "\"name\": ...}` (its text as is) or `{\"type\": \"file\", \"path\": ...}` (a workspace file "
                   "the model is told to read).")


#: Integer ranges of the wire: LSP's `integer` (int32) and SQLite's INTEGER (int64). A value outside
#: them is InvalidParams naming the field, never an overflow deeper in the server.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
Int64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]


class Params(WireModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class Result(WireModel):
    pass


SessionID = Annotated[str, Field(min_length=1, max_length=200, description="A session ID (`ses_…`).")]


# --- agent/run --------------------------------------------------------------------------------


class RunParams(Params):
    """Start a generation: in a new session, or in an existing idle one."""

    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS,
                        description=f"The user's message; at most {MAX_PROMPT_CHARS} characters.")
    session_id: SessionID | None = Field(None, description="Continue this session; omit for a new one.")
    model: str | None = Field(None, min_length=1, max_length=200,
                              description="`provider/model` for this generation only; default: the setting.")
    max_steps: int | None = Field(None, ge=1, le=10_000,
                                  description="Step budget of this generation; default: the `maxSteps` setting.")
    attachments: list[Any] | None = Field(
        None, max_length=MAX_ATTACHMENTS,
        description=ATTACHMENTS_DOC + " Another kind, a malformed one, or a prompt that with them is over "
                    f"{MAX_PROMPT_CHARS} characters is refused (`attachment_refused`) and nothing is started.")
    work_done_token: Int32 | str | None = Field(
        None, description="A client-created `$/progress` token (LSP WorkDoneProgressParams); without it the "
                          "server creates one when the client supports window.workDoneProgress.")


class RunResult(Result):
    """Returned at once; the run continues in the background and streams `agent/event`."""

    session_id: str
    generation: str
    message_id: str = Field("", description="The user message the run starts with (stored before this answer): "
                                            "what `agent/rewind` takes to go back to before the run.")


# --- agent/cancel -----------------------------------------------------------------------------


class CancelParams(Params):
    session_id: SessionID = Field(description="The session whose running generation to cancel.")


class CancelResult(Result):
    cancelled: bool = Field(description="True when a generation was running and is now stopping.")
    generation: str | None = Field(None, description="The generation that was cancelled.")


# --- agent/sessions ---------------------------------------------------------------------------


class SessionsParams(Params):
    limit: int = Field(DEFAULT_PAGE, ge=1, le=MAX_PAGE, description="Most sessions to return, newest first.")


class SessionOwner(Result):
    """The other lsp-agent process that writes a session now (`session_busy`)."""

    pid: int | None = Field(None, description="Its process ID (in its own pid namespace).")
    host: str | None = Field(None, description="The host name it runs on.")


class SessionInfo(Result):
    session_id: str
    title: str
    model: str
    created_at: int = Field(description="Milliseconds since the epoch.")
    updated_at: int = Field(description="Milliseconds since the epoch.")
    state: Literal["idle", "running"]
    generation: str | None = Field(None, description="The running generation, when state is running here.")
    owner: SessionOwner | None = Field(
        None, description="When another lsp-agent process (another editor window, a CLI run) runs the session: "
                          "that process (state is running, generation absent). It can be read here; a run here "
                          "is `session_busy` until that process is done with it.")


class SessionsResult(Result):
    sessions: list[SessionInfo]


# --- agent/session ----------------------------------------------------------------------------


class SessionParams(Params):
    session_id: SessionID
    after: str | None = Field(None, min_length=1, max_length=200,
                              description="A message ID: return the messages after it (the `next` of the "
                                          "previous page). Omit to start at the first message.")
    limit: int = Field(DEFAULT_PAGE, ge=1, le=MAX_PAGE, description="Most messages in this page.")


class _PartOut(WireModel):
    # Stored parts may carry provider-private fields (encrypted reasoning); the wire omits them.
    model_config = ConfigDict(extra="ignore")
    id: str


class TextPartOut(_PartOut):
    type: Literal["text"] = "text"
    text: str
    synthetic: bool = Field(False, description="Written by the harness (a note or reminder), not a person.")
    metadata: dict[str, Any] | None = None


class ReasoningPartOut(_PartOut):
    type: Literal["reasoning"] = "reasoning"
    text: str


class ToolCallPartOut(_PartOut):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: str = Field(description="The call's arguments as the model sent them (JSON text).")


class ToolResultPartOut(_PartOut):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    ok: bool
    output: str
    error_kind: str | None = None
    metadata: dict[str, Any] | None = Field(
        None, description="Facts the harness derives state from: read/written paths, exit code, the verify "
                          "envelope.")
    elapsed_ms: int = 0


PartOut = Annotated[TextPartOut | ReasoningPartOut | ToolCallPartOut | ToolResultPartOut,
                    Field(discriminator="type")]


class MessageOut(Result):
    id: str
    role: Literal["user", "assistant", "tool"]
    generation: str | None = None
    step: int | None = None
    parts: list[PartOut]


class SessionResult(Result):
    session_id: str
    title: str
    messages: list[MessageOut]
    next: str | None = Field(None, description="Pass as `after` to get the next page; absent on the last page.")


# --- agent/status -----------------------------------------------------------------------------


class StatusParams(Params):
    session_id: SessionID | None = Field(
        None, description="The session to report on; omit for the running session, if any.")


class StatusResult(Result):
    session_id: str | None = None
    state: Literal["idle", "running"]
    generation: str | None = Field(None, description="The running generation, when state is running.")
    verification: VerificationStatus = Field(description="Derived from the session's record, never from the model's "
                                                       "words: the latest verify_project result, `not_run` "
                                                       "once a later write made it stale.")
    step: int = Field(description="Steps used by the running generation; 0 when idle.")
    max_steps: int | None = Field(None, description="Step budget of the running generation.")
    mcp_unavailable: list[str] | None = Field(
        None, description="`name: error` of each MCP server that failed to start or died (their tools are "
                          "not offered; details in agent/mcp/list); absent when none did.")


# --- agent/event (server → client notification) -----------------------------------------------


class EventParams(Result):
    """One core event. Text and reasoning deltas of one part may be coalesced (~30 ms); order is
    preserved; the last event of a generation is `run_finish`."""

    session_id: str
    generation: str
    event: Event


# --- agent/saveDocuments (server → client request) --------------------------------------------


class SaveDocumentsParams(Params):
    """Before verify_project runs, the server asks the editor to save the documents the agent edited
    in open buffers, so disk equals what the agent edited."""

    uris: list[str] = Field(description="Document URIs to save, as the client opened them.")


class _Reply(WireModel):
    # An editor's answer: extra fields are ignored (clients grow), wrong types are still errors.
    model_config = ConfigDict(extra="ignore")


class SaveFailure(_Reply):
    uri: str
    reason: str


class SaveDocumentsResult(_Reply):
    saved: list[str] = Field(default_factory=list, description="URIs now saved to disk.")
    failed: list[SaveFailure] = Field(default_factory=list, description="URIs that could not be saved, and why.")


# --- lsp-agent.fixDiagnostic (workspace/executeCommand argument) ------------------------------


class FixDiagnosticArgs(Params):
    """The single argument of the `lsp-agent.fixDiagnostic` command (built by the code action)."""

    uri: str = Field(min_length=1, max_length=4096)
    line: int = Field(ge=1, le=INT32_MAX, description="1-based line of the failure.")
    message: str = Field(max_length=MAX_PROMPT_CHARS // 2)
    kind: str = Field(description="The check kind: test, typecheck or lint.")
    session_id: SessionID | None = Field(None, description="The session whose check reported the failure.")


# --- errors -----------------------------------------------------------------------------------


class ErrorData(Result):
    """`error.data` of every error this server returns from an agent/* method."""

    kind: str = Field(description="Machine-readable class, e.g. invalid_params, too_large, unknown_session, busy.")
    status: int = Field(description="The HTTP-like status: 400, 404, 409, 413, 500, 503.")
    field: str | None = Field(None, description="For invalid params: the offending field (dotted path).")
    owner: SessionOwner | None = Field(None, description="For `session_busy`: the process that runs the session.")


__all__ = [
    "MAX_PROMPT_CHARS",
    "CancelParams",
    "CancelResult",
    "ErrorData",
    "EventParams",
    "FixDiagnosticArgs",
    "MessageOut",
    "RunParams",
    "RunResult",
    "SaveDocumentsParams",
    "SaveDocumentsResult",
    "SessionInfo",
    "SessionOwner",
    "SessionParams",
    "SessionResult",
    "SessionsParams",
    "SessionsResult",
    "StatusParams",
    "StatusResult",
]
