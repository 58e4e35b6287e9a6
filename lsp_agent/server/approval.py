"""The editor as the core's Approver: `agent/requestApproval` (server → client request).

Thin: the ApprovalDesk in the core bounds the wait (approvalTimeoutS) and races the run's cancel;
here an error reply, a client without the method or a malformed answer becomes a deny with the
reason in `who`, so the record says why nothing ran.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import ValidationError

from lsp_agent.core.approval import Answer, ApprovalRequest, Decision
from lsp_agent.protocol.approval_models import AGENT_REQUEST_APPROVAL, RequestApprovalParams, RequestApprovalResult
from lsp_agent.server.convert import to_plain


class _Requests(Protocol):
    def send_request_async(self, method: str, params: object) -> object: ...


class _Server(Protocol):
    @property
    def protocol(self) -> _Requests: ...


class EditorApprover:
    def __init__(self, server: _Server) -> None:
        self.server = server

    async def ask(self, request: ApprovalRequest) -> Answer:
        params = RequestApprovalParams(
            session_id=request.session_id, generation=request.generation, call_id=request.call_id,
            tool=request.tool, kind=request.kind, what=request.what, why=request.why, reason=request.reason.value,
            options=[o.value for o in request.options], session_scope=request.session_scope)
        try:
            raw = await self.server.protocol.send_request_async(AGENT_REQUEST_APPROVAL, params.wire())  # type: ignore[misc]
        except Exception as exc:  # method not found, an error reply, a closed connection
            return Answer(Decision.DENY, f"editor error ({type(exc).__name__}: {exc})"[:200])
        try:
            answer = RequestApprovalResult.model_validate(to_plain(raw) or {})
        except ValidationError as exc:
            return Answer(Decision.DENY, f"editor (malformed answer: {exc.error_count()} problems)")
        return Answer(Decision(answer.decision), "user (editor)")
