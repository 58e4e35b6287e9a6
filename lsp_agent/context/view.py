"""The model-visible history: what `build_request` sends, derived from the complete stored record.

The store keeps every message. A compaction appends one marker message (a synthetic text part
holding the summary, with metadata naming the first kept message); the view then starts with
that summary, followed by the kept tail and everything after it. Folded tool results are
replaced, in the view only, by one-line placeholders. Nothing stored is ever rewritten.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lsp_agent.domain.history import Message, TextPart, ToolResultPart

__all__ = [
    "COMPACTION",
    "HANDOFF",
    "STALE",
    "ViewCache",
    "compaction_of",
    "harness_note",
    "latest_compaction",
    "model_view",
]

#: TextPart metadata of a compaction summary (the marker message records the range it replaced).
COMPACTION = "compaction"
#: TextPart metadata of the note that seeds a session started by a handoff.
HANDOFF = "handoff"
#: TextPart metadata of an appended stale-read note.
STALE = "stale"


def compaction_of(message: Message) -> dict[str, Any] | None:
    for part in message.parts:
        if isinstance(part, TextPart) and part.synthetic:
            info = part.metadata.get(COMPACTION)
            if isinstance(info, dict):
                return info
    return None


def harness_note(message: Message) -> bool:
    """A message written by the harness alone (notes, summaries), not by the user or the model."""
    return bool(message.parts) and all(isinstance(p, TextPart) and p.synthetic for p in message.parts)


def latest_compaction(history: Sequence[Message]) -> tuple[int, Message] | None:
    for index in range(len(history) - 1, -1, -1):
        if compaction_of(history[index]) is not None:
            return index, history[index]
    return None


def model_view(history: Sequence[Message], folded: dict[str, str] | None = None) -> list[Message]:
    """The messages a request carries: after the latest compaction, its summary first and then the
    stored messages from the first kept one on (earlier summaries are superseded); folded tool
    results become their placeholders."""
    found = latest_compaction(history)
    if found is None:
        messages: Iterable[Message] = history
    else:
        index, marker = found
        info = compaction_of(marker) or {}
        keep_from = info.get("keepFrom")
        start = next((i for i, m in enumerate(history) if m.id == keep_from), index + 1)
        messages = [marker, *(m for m in history[start:] if compaction_of(m) is None)]
    if not folded:
        return list(messages)
    return [fold_message(m, folded) for m in messages]


def fold_message(message: Message, folded: dict[str, str]) -> Message:
    if not any(isinstance(p, ToolResultPart) and p.id in folded for p in message.parts):
        return message
    parts = [p.model_copy(update={"output": folded[p.id]}) if isinstance(p, ToolResultPart) and p.id in folded
             else p for p in message.parts]
    return message.model_copy(update={"parts": parts})


class ViewCache:
    """`model_view` kept up to date as the history grows, so a step costs its new messages only.

    History is append-only: a new message extends the view unless it is a compaction marker.
    The view is rebuilt when that happens, when the folded set changed (folds only add entries),
    or when the history is not the list seen before or was changed other than by appending."""

    def __init__(self) -> None:
        self._history: Sequence[Message] | None = None
        self._seen = 0
        self._last: Message | None = None
        self._folded = 0
        self._view: list[Message] = []

    def view(self, history: Sequence[Message], folded: dict[str, str]) -> list[Message]:
        seen = self._seen
        extends = (history is self._history and len(history) >= seen and len(folded) == self._folded
                   and (seen == 0 or history[seen - 1] is self._last))
        new = history[seen:] if extends else ()
        if extends and not any(compaction_of(m) is not None for m in new):
            self._view.extend(fold_message(m, folded) if folded else m for m in new)
        else:
            self._view = model_view(history, folded)
        self._history = history
        self._seen = len(history)
        self._last = history[-1] if history else None
        self._folded = len(folded)
        return list(self._view)
