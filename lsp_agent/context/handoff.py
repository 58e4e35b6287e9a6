"""Restart with a handoff: a fresh session seeded with a note of the same six items.

Used on demand (`agent/handoff`) and automatically when the same check has failed the same
way several times in a row — more of the same context will not help. The note is written
by the model and checked exactly like a compaction summary (missing requirements are put
back with their pointers); the new session's `parent_id` links it to the old one, and the
note's pointers refer to the old session's messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lsp_agent.context.budget import Budget
from lsp_agent.context.compaction import (
    Item,
    check_summary,
    compaction_prompt,
    failure_signature,
    harness_summary,
    required_items,
    touched_files,
)
from lsp_agent.context.folding import fold_all
from lsp_agent.context.manager import Ask
from lsp_agent.context.view import HANDOFF, compaction_of, model_view
from lsp_agent.domain import ids
from lsp_agent.domain.events import NoticeEvent
from lsp_agent.domain.history import REPLACED_TURNS, Message, Role, TextPart, assistant_turns
from lsp_agent.domain.ports import ModelRequest

if TYPE_CHECKING:
    from lsp_agent.context.session_port import ContextSession

__all__ = ["CONTINUE_PROMPT", "HANDOFF_MARKER", "Handoff", "prepare_handoff", "same_failure_streak"]

HANDOFF_MARKER = "[lsp-agent handoff]"
CONTINUE_PROMPT = ("Continue the work described in the handoff note above. Read the files you need again "
                   "before editing them; do not repeat the approaches it says failed.")


@dataclass(frozen=True)
class Handoff:
    session_id: str
    parent_id: str
    note_message_id: str
    reason: str
    repaired: list[Item] = field(default_factory=list)
    #: files the old session touched: the new one must read them before editing
    files: list[str] = field(default_factory=list)


def same_failure_streak(history: Sequence[Message]) -> int:
    """How many of the latest verifications in a row failed in exactly the same way."""
    streak = 0
    signature: str | None = None
    for message in reversed(history):
        for part in reversed(message.tool_results()):
            if not isinstance(part.metadata.get("envelope"), dict):
                continue
            current = failure_signature(part)
            if current is None or (signature is not None and current != signature):
                return streak
            signature = current
            streak += 1
    return streak


async def prepare_handoff(session: ContextSession, request: ModelRequest, ask: Ask, reason: str,
                          generation: str = "", step: int = 0) -> Handoff:
    """Write the checked handoff note into a new child session; the caller starts its generation."""
    env = session.env
    history = session.history
    originals = [m for m in history if compaction_of(m) is None]
    items = required_items(originals, env.root)
    view = model_view(history)
    prompt = compaction_prompt(HANDOFF_MARKER, len(view), items,
                               f"Write a handoff note: a fresh session will continue this work from it alone "
                               f"({reason}).")
    ask_for = request.model_copy(update={"tail": [prompt]})
    budget = Budget.of(env.settings, env.model.info.context_window)
    if session.context.counter.tokens(ask_for) > budget.tokens:
        # Raw tool output is not needed for the note; the request itself must fit the window.
        ask_for = ask_for.model_copy(update={"messages": fold_all(ask_for.messages)})
    reply = await ask(ask_for, "handoff")
    text = reply.text.strip() or harness_summary(items, touched_files(originals))
    checked, missing = check_summary(text, items)
    files = sorted(touched_files(originals))
    new_id = ids.session_id()
    row = env.store.session(session.id)
    title = f"handoff: {row.title}" if row is not None and row.title else "handoff"
    env.store.create_session(new_id, str(env.root), env.settings.model, title[:120], parent_id=session.id)
    body = (f"[handoff note from lsp-agent: this session continues session {session.id} ({reason}). The pointers "
            f"in [brackets] are message/part IDs of that session.]\n{checked}\n\n"
            "[read a file again before editing it: this session has not seen any file yet]")
    info = {"from": session.id, "reason": reason, "items": [i.wire() for i in items],
            "repaired": [i.pointer for i in missing], "source": "model" if reply.text.strip() else "harness"}
    note = Message(role=Role.USER, parts=[TextPart(text=body, synthetic=True,
                                                   metadata={HANDOFF: info, REPLACED_TURNS: assistant_turns(view)})])
    env.store.append_message(new_id, note)
    data = {"from": session.id, "to": new_id, "reason": reason, "items": len(items),
            "repaired": [i.wire() for i in missing]}
    env.store.record_event(session.id, "context.handoff", {"generation": generation or None, "step": step, **data})
    env.store.record_event(new_id, "context.handoff", {"generation": None, "step": 0, **data})
    env.sink.emit(NoticeEvent(session_id=session.id, generation=generation, kind="handoff",
                              message=f"handed off to a fresh session {new_id} ({reason}); the note keeps the "
                                      f"task, constraints, failures and next step with pointers here",
                              data=data))
    if missing:
        env.store.record_event(session.id, "context.repair", {"handoff": new_id,
                                                              "items": [i.wire() for i in missing]})
    return Handoff(new_id, session.id, note.id, reason, missing, files)
