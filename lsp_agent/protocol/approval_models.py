"""`agent/requestApproval`: the server asks the editor to approve one tool call (the approval policy;
see docs/security.md). Any error, a malformed answer or no answer within `approvalTimeoutS` is a
deny (an approval must fail closed); cancelling the run while the editor asks cancels the call.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lsp_agent.domain.wire import WireModel
from lsp_agent.protocol.models import Result

AGENT_REQUEST_APPROVAL = "agent/requestApproval"

DecisionName = Literal["allow_once", "allow_session", "deny"]


class RequestApprovalParams(Result):
    """One call the approval policy says the user must approve before it runs."""

    session_id: str
    generation: str
    call_id: str = Field(description="The model's call ID (the `callID` of the later `tool_use` event).")
    tool: str = Field(description="The tool, e.g. `run_command`, `verify_project`, `mcp__server__tool`.")
    kind: Literal["command", "mcp", "edit"] = Field(
        description="`command`: `what` is the argv joined like a shell (verify_project: its checks, `; `-separated); "
                    "`mcp`: the tool and its JSON arguments; `edit`: the edit as a unified diff.")
    what: str = Field(description="What will run or change, as the user should see it.")
    why: str = Field(description="Why it needs an approval (e.g. it would run without a sandbox).")
    reason: Literal["untrusted", "unsandboxed", "mcp", "retry_unsandboxed", "sensitive_path"] = Field(
        description="The policy rule that asks: `untrusted` (every command), `unsandboxed` (bubblewrap unavailable), "
                    "`mcp` (an MCP tool that may change things), `retry_unsandboxed` (on-failure: re-run a command "
                    "that failed in the sandbox without it), `sensitive_path` (an edit of a file other programs run "
                    "when the workspace is opened: `tools.sensitive_paths`).")
    options: list[DecisionName] = Field(description="The answers offered, in display order.")
    session_scope: str = Field(
        description="What `allow_session` would allow without asking again, in the words the user reads, e.g. "
                    "\"exactly `python3 -m pytest -q` in run_command\": a command's whole argv (verify_project: "
                    "its exact checks together), for the same reason; an MCP tool whatever its arguments. "
                    "Front ends label the allow-for-session choice with it.")


class RequestApprovalResult(WireModel):
    # An editor's answer: extra fields are ignored (clients grow); anything else than these three is a deny.
    model_config = ConfigDict(extra="ignore")

    decision: DecisionName = Field(
        description="`allow_once`: run this call; `allow_session`: run it and do not ask again in this session "
                    "for what `sessionScope` says (nothing broader); `deny`: do not run it.")


METHOD_DOC: tuple[str, Literal["request"], str, type[BaseModel], type[BaseModel], str] = (
    AGENT_REQUEST_APPROVAL, "request", "server → client", RequestApprovalParams, RequestApprovalResult,
    "Sent before a call the approval policy (`approvalPolicy`) names runs: under `untrusted` every command; under "
    "every policy but `never` a command that would run without a sandbox and an MCP tool that is not read-only "
    "by a trusted server; under `on-failure` also a re-run without the sandbox of a command that failed in it. "
    "The call waits for the answer. An error reply, a malformed answer, no answer within `approvalTimeoutS` "
    "(default 300 s) or a client without this method is a deny; cancelling the run while it waits cancels the call. "
    "A command matching one of the user's `[approvals] allow` rules is not asked (recorded with who "
    "`rule: <pattern>`). Every decision is stored and announced as a `notice` event of kind `approval` "
    "(`data`: what, why, decision, who, scope, at).",
)
