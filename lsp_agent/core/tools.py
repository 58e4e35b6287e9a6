"""What every tool is: a pydantic argument model (its schema), an access class the gate reads,
a four-part description, and an async body returning a ToolResult. The core owns this
abstraction; the concrete tools live in `lsp_agent/tools/`.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from lsp_agent.core.approval import ApprovalSubject
from lsp_agent.core.checkpoint_port import StepCheckpoints
from lsp_agent.core.editor_queries import EditorQueries
from lsp_agent.core.write_detect import IgnoredPaths
from lsp_agent.domain.edits import EditApplier
from lsp_agent.domain.history import ErrorKind, Message
from lsp_agent.domain.ports import DocumentSource
from lsp_agent.settings.config import Settings


class Access(StrEnum):
    READ = "read"  # shares the gate with other reads
    WRITE = "write"  # exclusive
    EXEC = "exec"  # exclusive


class PathArg:
    """Marks an argument as a workspace-relative path; the controller checks it before any effect."""


class ContentArg:
    """Marks an argument as text to write; the controller enforces the size limit."""


RelPath = Annotated[str, PathArg()]
WriteText = Annotated[str, ContentArg()]


#: Why a command line may not run (a refusal the model can act on), or None when it may. The front end
#: supplies it (the allow-list and the per-program rules are tool policy, not the core's); the
#: controller applies it to every command line a call declares, before anything starts.
CommandPolicy = Callable[[Sequence[str], Settings, Path], str | None]


class StrictArgs(BaseModel):
    # Exactly the schema's names; no coercion of "5" into 5.
    model_config = ConfigDict(extra="forbid", strict=True)


@dataclass
class ToolResult:
    ok: bool
    output: str
    error_kind: ErrorKind | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def success(cls, text: str, **metadata: Any) -> ToolResult:
        return cls(True, text if text.startswith("OK:") else f"OK: {text}", None, metadata)

    @classmethod
    def failure(cls, kind: ErrorKind, text: str, **metadata: Any) -> ToolResult:
        return cls(False, text if text.startswith("ERROR:") else f"ERROR: {text}", kind, metadata)


@dataclass
class FileTracker:
    """Per-session facts tools consult: what was read (and when) and failed edits per file."""

    read_steps: dict[str, int] = field(default_factory=dict)
    failed_edits: dict[str, int] = field(default_factory=dict)
    # Files that must be read again before an edit (after a compaction, or failed edits).
    reread_required: set[str] = field(default_factory=set)

    def note_read(self, path: str, step: int) -> None:
        self.read_steps[path] = step
        self.failed_edits.pop(path, None)
        self.reread_required.discard(path)

    def note_edit_failed(self, path: str, limit: int) -> None:
        self.failed_edits[path] = self.failed_edits.get(path, 0) + 1
        if self.failed_edits[path] >= limit:
            self.reread_required.add(path)

    def note_edit_ok(self, path: str) -> None:
        self.failed_edits.pop(path, None)


class HistorySource(Protocol):
    """The stored record of sessions, read-only (context_recover reads its own session's)."""

    def messages(self, session_id: str) -> list[Message]: ...


@dataclass
class ToolContext:
    root: Path
    settings: Settings
    documents: DocumentSource
    applier: EditApplier
    files: FileTracker
    step: int = 0
    session_id: str = ""
    message_id: str = ""
    #: the session store, when the call runs inside a session (absent in unit tests of single tools)
    history: HistorySource | None = None
    #: the generation's cancel event: set when the user interrupts
    cancel: asyncio.Event | None = None
    #: the user approved running this call's command without the OS sandbox (approval policy)
    approved_unsandboxed: bool = False
    #: the user approved this call's edit of sensitive paths (tools.sensitive_paths)
    approved_sensitive: bool = False
    #: which command lines may run; None: none may (a call that declares one is refused)
    command_policy: CommandPolicy | None = None
    #: which changed paths Git ignores (write detection); None: every change counts
    ignored_paths: IgnoredPaths | None = None
    #: records the workspace around each step that may write (None: no checkpoints)
    checkpoints: StepCheckpoints | None = None
    #: the editor's language intelligence (None: no editor, or it answers no queries)
    editor: EditorQueries | None = None


ArgsT = TypeVar("ArgsT", bound=StrictArgs)


class Tool(ABC, Generic[ArgsT]):
    name: ClassVar[str]
    access: ClassVar[Access]
    args_model: ClassVar[type[StrictArgs]]
    summary: ClassVar[str]  # what it does
    use_when: ClassVar[str]
    avoid_when: ClassVar[str]  # and what to use instead

    @property
    def description(self) -> str:
        return f"{self.summary}\n\nUse when: {self.use_when}\nDo not use when: {self.avoid_when}"

    def paths(self, args: ArgsT) -> Iterable[str]:
        """Workspace paths this call touches; default: every field marked RelPath."""
        for name, info in type(args).model_fields.items():
            if any(isinstance(m, PathArg) for m in info.metadata):
                value = getattr(args, name)
                if isinstance(value, str):
                    yield value

    def contents(self, args: ArgsT) -> Iterable[str]:
        for name, info in type(args).model_fields.items():
            if any(isinstance(m, ContentArg) for m in info.metadata):
                value = getattr(args, name)
                if isinstance(value, str):
                    yield value

    def commands(self, args: ArgsT) -> Iterable[list[str]]:
        """The command lines (program and arguments) this call would start; the controller checks
        each against the session's command policy. Default: none."""
        return ()

    def approval(self, args: ArgsT, ctx: ToolContext) -> ApprovalSubject | None:
        """What the approval policy looks at for this call (None: nothing to approve). Called in a
        thread before the call runs, so it may block (probe the sandbox, list files)."""
        return None

    @abstractmethod
    async def run(self, args: ArgsT, ctx: ToolContext) -> ToolResult:
        """Do the work. Expected failures return ToolResult.failure; never raise for them."""
