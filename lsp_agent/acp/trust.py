"""Workspace trust through `session/request_permission`: the repository's own config applies only its
safe settings until the user answers "Trust and apply" to a question that lists what the rest would
do (start which program, send the key where). Any failure or another answer is "not trusted"."""

from __future__ import annotations

from typing import Any

from acp.helpers import start_tool_call, text_block, tool_content, update_tool_call
from acp.schema import PermissionOption, ToolCallUpdate

from lsp_agent.acp.permission import PermissionClient
from lsp_agent.acp.updates import UpdateSink
from lsp_agent.app.trust_wire import trust_state
from lsp_agent.settings.workspace_trust import CONFIG_FILE, WorkspaceView

TRUST = PermissionOption(option_id="trust", name="Trust and apply", kind="allow_once")
NOT_NOW = PermissionOption(option_id="not_now", name="Not now", kind="reject_once")


def question(view: WorkspaceView) -> str:
    why = "changed since you trusted it" if view.state == "changed" else "is not trusted"
    effects = "\n".join(f"- {g.setting}: {g.effect}" for g in view.gated)
    return (f"This workspace's {CONFIG_FILE} {why}. Until you trust it, these settings are ignored "
            f"(the agent works without them):\n{effects}\nTrust it and apply them?")


async def ask_trust(client: PermissionClient, sink: UpdateSink, session_id: str, view: WorkspaceView) -> bool:
    """True only when the user picked "Trust and apply"."""
    ident = f"workspace_trust_{(view.hash or 'none')[:16]}"
    title = f"Trust {CONFIG_FILE} of {view.root.name}?"
    content = [tool_content(text_block(question(view)))]
    state: dict[str, Any] = trust_state(view).wire()
    sink.send(session_id, start_tool_call(ident, title, kind="other", status="pending", content=content,
                                          raw_input=state))
    await sink.flush()
    call = ToolCallUpdate(tool_call_id=ident, title=title, kind="other", status="pending", content=content,
                          raw_input=state)
    try:
        answer = await client.request_permission(session_id, call, [TRUST, NOT_NOW])
    except Exception:  # an error reply or a closed connection: nothing is trusted
        answer = None
    outcome = getattr(answer, "outcome", None)
    trusted = getattr(outcome, "outcome", None) == "selected" and getattr(outcome, "option_id", None) == TRUST.option_id
    sink.send(session_id, update_tool_call(ident, status="completed" if trusted else "failed"))
    await sink.flush()
    return trusted
