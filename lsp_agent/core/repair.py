"""Repair on load: tool calls a dead process left without results get a result that says so.

A server killed while a tool runs has stored the assistant message with its calls but never the
results. Every provider rejects (or misreads) a history with an unanswered call, so the session
would be bricked. On load the harness answers each such call once, saying it was interrupted by a
restart and whether it may have had effects (read-only tools: none; writes and commands: maybe).
The answer is an ordinary appended tool message, so a second load finds nothing to repair.
"""

from __future__ import annotations

from lsp_agent.core.tool_registry import ToolRegistry
from lsp_agent.core.tools import Access
from lsp_agent.domain.history import ErrorKind, Message, Role, ToolCallPart, ToolResultPart

__all__ = ["INTERRUPTED", "MAY_HAVE_EFFECTS", "interrupted_results", "unanswered_calls"]

#: ToolResultPart metadata: the call was interrupted by a restart (True)
INTERRUPTED = "interrupted_by_restart"
#: ToolResultPart metadata: whether the interrupted call may have changed anything
MAY_HAVE_EFFECTS = "may_have_had_effects"

_NO_EFFECTS = ("ERROR: this call was interrupted: lsp-agent restarted before it finished, so it has no result. "
               "The tool only reads, so it had no effects; call it again if you still need its result.")
_MAYBE_EFFECTS = ("ERROR: this call was interrupted: lsp-agent restarted before it finished, so it has no result. "
                  "It may have had effects before it stopped (files written, commands partly run): check the "
                  "current state (read the files, run the check) before repeating it.")


def unanswered_calls(history: list[Message]) -> list[tuple[Message, ToolCallPart]]:
    """Assistant tool calls with no tool result anywhere in the history, in history order."""
    answered = {p.call_id for m in history if m.role is Role.TOOL for p in m.tool_results()}
    return [(m, c) for m in history if m.role is Role.ASSISTANT for c in m.tool_calls() if c.call_id not in answered]


def _may_have_effects(name: str, registry: ToolRegistry) -> bool:
    tool = registry.get(name)
    # An unknown tool was rejected before any effect; a known one had effects only if it writes or runs.
    return tool is not None and tool.access is not Access.READ


#: the same answers for calls whose results the store refused (a full disk): the process lived on
_STORE_NO_EFFECTS = ("ERROR: this call has no result: the session store could not record it (the run ended "
                     "with a store error). The tool only reads, so it had no effects; call it again if you still "
                     "need its result.")
_STORE_MAYBE_EFFECTS = ("ERROR: this call has no result: the session store could not record it (the run ended "
                        "with a store error). It may have had effects (files written, commands run): check the "
                        "current state (read the files, run the check) before repeating it.")


def interrupted_results(history: list[Message], registry: ToolRegistry, *,
                        store_fault: bool = False) -> list[Message]:
    """One tool message per assistant message with unanswered calls (its generation and step), answering
    each call; empty when the history is whole. Deterministic: no timestamps, no random text.
    `store_fault`: the results were lost to a store that refused them, not to a restart."""
    texts = (_STORE_NO_EFFECTS, _STORE_MAYBE_EFFECTS) if store_fault else (_NO_EFFECTS, _MAYBE_EFFECTS)
    by_message: dict[str, tuple[Message, list[ToolCallPart]]] = {}
    for message, call in unanswered_calls(history):
        by_message.setdefault(message.id, (message, []))[1].append(call)
    repairs = []
    for message, calls in by_message.values():
        parts: list[ToolResultPart] = []
        for call in calls:
            effects = _may_have_effects(call.name, registry)
            parts.append(ToolResultPart(call_id=call.call_id, name=call.name, ok=False,
                                        output=texts[1] if effects else texts[0],
                                        error_kind=ErrorKind.CANCELLED,
                                        metadata={INTERRUPTED: True, MAY_HAVE_EFFECTS: effects}))
        repairs.append(Message(role=Role.TOOL, parts=list(parts), generation=message.generation, step=message.step))
    return repairs
