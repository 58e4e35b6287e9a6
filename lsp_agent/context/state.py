"""What a session knows of its context beyond its history: folded results, the token counter, the
cached model view, one compaction at a time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from lsp_agent.context.budget import TokenCounter
from lsp_agent.context.folding import placeholder
from lsp_agent.context.stale import StaleScanner
from lsp_agent.context.view import ViewCache
from lsp_agent.domain.history import Message


class FoldEvents(Protocol):
    """The store's event log, where earlier folds were recorded."""

    def events(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]: ...


@dataclass
class ContextState:
    """Per-session context facts that are not in the history itself."""

    #: folded tool-result part ID → its placeholder (view only; the stored part is unchanged)
    folded: dict[str, str] = field(default_factory=dict)
    counter: TokenCounter = field(default_factory=TokenCounter)
    #: the model-visible view and the stale-read facts, kept up to date as the history grows
    views: ViewCache = field(default_factory=ViewCache, repr=False)
    stale: StaleScanner = field(default_factory=StaleScanner, repr=False)
    #: one compaction in flight per session
    compacting: bool = False
    #: agent/compact on a running session: compact at the next step boundary
    compact_requested: bool = False

    @classmethod
    def load(cls, store: FoldEvents, session_id: str, history: Sequence[Message]) -> ContextState:
        """A resumed session folds what it folded before (so its prefix stays what it was)."""
        state = cls()
        ids: set[str] = set()
        for event in store.events(session_id, "context.fold"):
            ids.update(str(p) for p in event.get("parts") or [])
        if ids:
            for message in history:
                for part in message.tool_results():
                    if part.id in ids:
                        state.folded[part.id] = placeholder(part)
        return state
