"""What context engineering needs of a session, as the session offers it.

Compaction and handoff read a session's history and write notes, events and new sessions through
it; they are called by the core's loop and front door. Naming the core's session class here would
tie the two packages in a circle, so the context states the few things it uses and the core's
session satisfies them structurally (mypy checks it where the core passes its session in).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsp_agent.domain.history import Message
from lsp_agent.domain.ports import EventSink
from lsp_agent.settings.config import ModelInfo, Settings

if TYPE_CHECKING:
    from lsp_agent.context.state import ContextState


class TitledSession(Protocol):
    @property
    def title(self) -> str: ...


class ContextStore(Protocol):
    """The store operations compaction and handoff use."""

    def create_session(self, session_id: str, workspace: str, model: str, title: str = "",
                       parent_id: str | None = None) -> None: ...

    def session(self, session_id: str) -> TitledSession | None: ...

    def append_message(self, session_id: str, message: Message) -> None: ...

    def record_event(self, session_id: str, kind: str, data: dict[str, Any]) -> None: ...

    def events(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]: ...


class ModelView(Protocol):
    @property
    def info(self) -> ModelInfo: ...


class ContextEnvironment(Protocol):
    @property
    def root(self) -> Path: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> ContextStore: ...

    @property
    def sink(self) -> EventSink: ...

    @property
    def model(self) -> ModelView: ...


class TrackedFiles(Protocol):
    """Which files the session read (and must read again before editing them)."""

    @property
    def read_steps(self) -> Collection[str]: ...

    @property
    def reread_required(self) -> set[str]: ...


class ContextSession(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def env(self) -> ContextEnvironment: ...

    @property
    def context(self) -> ContextState: ...

    @property
    def history(self) -> list[Message]: ...

    @property
    def files(self) -> TrackedFiles: ...

    def context_view(self) -> list[Message]: ...

    def append(self, message: Message) -> None: ...
