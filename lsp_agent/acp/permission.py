"""`session/request_permission` as the front end of the approval policy: the core's ApprovalDesk decides
when to ask (and bounds the wait, races the cancel, records every decision); here the question goes to
the ACP client. Any failure or a `cancelled` outcome is a deny, with the reason in `who`."""

from __future__ import annotations

from typing import Any, Protocol

from acp.schema import PermissionOption, ToolCallUpdate

from lsp_agent.acp.updates import UpdateSink, kind_of, title_of
from lsp_agent.core.approval import Answer, ApprovalRequest, Decision

#: our decisions as ACP permission options (option IDs are our decision names)
OPTIONS = {
    Decision.ALLOW_ONCE: PermissionOption(option_id=Decision.ALLOW_ONCE.value, name="Allow once", kind="allow_once"),
    Decision.ALLOW_SESSION: PermissionOption(option_id=Decision.ALLOW_SESSION.value, name="Allow for this session",
                                             kind="allow_always"),
    Decision.DENY: PermissionOption(option_id=Decision.DENY.value, name="Deny", kind="reject_once"),
}


#: the longest session scope put into an option's name (the full text goes in the tool call's raw input)
SCOPE_IN_NAME = 120


def options_for(request: ApprovalRequest) -> list[PermissionOption]:
    """The offered options; "allow always" is named by what it grants, so the user reads the scope."""
    chosen = []
    for decision in request.options:
        option = OPTIONS[decision]
        if decision is Decision.ALLOW_SESSION and request.session_scope:
            scope = request.session_scope
            shown = scope if len(scope) <= SCOPE_IN_NAME else scope[:SCOPE_IN_NAME - 1] + "…"
            option = option.model_copy(update={"name": f"Allow for this session: {shown}"})
        chosen.append(option)
    return chosen


class PermissionClient(Protocol):
    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption],
                                 **kwargs: Any) -> Any: ...


class AcpApprover:
    def __init__(self, client: PermissionClient, sink: UpdateSink) -> None:
        self.client = client
        self.sink = sink

    async def ask(self, request: ApprovalRequest) -> Answer:
        # The client shows permission requests on a tool call it knows: announce it first, in order.
        ident = self.sink.announce(request.session_id, request.generation, request.call_id, request.tool,
                                   {"what": request.what})
        await self.sink.flush()
        call = ToolCallUpdate(tool_call_id=ident, title=title_of(request.tool, {}) + f": {request.what}"[:200],
                              kind=kind_of(request.tool), status="pending",
                              raw_input={"what": request.what, "why": request.why, "reason": request.reason.value,
                                         "sessionScope": request.session_scope})
        try:
            answer = await self.client.request_permission(
                request.session_id, call, options_for(request),
                lspAgent={"why": request.why, "reason": request.reason.value, "sessionScope": request.session_scope})
        except Exception as exc:  # an error reply or a closed connection: nothing runs
            return Answer(Decision.DENY, f"client error ({type(exc).__name__}: {exc})"[:200])
        outcome = getattr(answer, "outcome", None)
        if getattr(outcome, "outcome", None) != "selected":
            return Answer(Decision.DENY, "client (cancelled the request)")
        try:
            decision = Decision(getattr(outcome, "option_id", ""))
        except ValueError:
            return Answer(Decision.DENY, "client (unknown option)")
        if decision not in request.options:
            return Answer(Decision.DENY, "client (an option that was not offered)")
        return Answer(decision, "user (ACP client)")
