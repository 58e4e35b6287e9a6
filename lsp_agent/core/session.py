"""A session: one conversation with its record, its file facts and its gate.

Generations (one per user message) run one at a time; the record is loaded from
the store on resume and appended to as each message is created.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsp_agent.context.state import ContextState
from lsp_agent.core.announce import INSTRUCTIONS, SkillsSeen
from lsp_agent.core.approval import Approver, DenyAll, remembered
from lsp_agent.core.checkpoint_port import StepCheckpoints
from lsp_agent.core.editor_queries import EditorQueries
from lsp_agent.core.gate import Gate
from lsp_agent.core.lease import SessionLeases
from lsp_agent.core.prefix import RequestBytes
from lsp_agent.core.rejected_calls import bounded_history
from lsp_agent.core.repair import interrupted_results, unanswered_calls
from lsp_agent.core.storage import PendingCorrection, Store, StoreUnavailable
from lsp_agent.core.tool_registry import ToolRegistry
from lsp_agent.core.tools import CommandPolicy, FileTracker
from lsp_agent.core.write_detect import IgnoredPaths
from lsp_agent.domain import ids
from lsp_agent.domain.edits import EditApplier
from lsp_agent.domain.history import Message, Role, TextPart
from lsp_agent.domain.ports import (
    DocumentSource,
    EventSink,
    NoSkills,
    Provider,
    SkillsSource,
    ToolSpec,
    TraceOpener,
)
from lsp_agent.domain.verification import EXTERNAL_CHANGE, RESTORED_CHECK
from lsp_agent.settings.config import ModelInfo, Settings

if TYPE_CHECKING:
    from lsp_agent.core.steering import Steering


class ToolServers(Protocol):
    """Servers whose tools join the registry (MCP): started when a session first needs them."""

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    def unavailable(self) -> list[str]: ...
log = logging.getLogger(__name__)


class NullSink:
    def emit(self, event: object) -> None:
        pass


def external_change_note(paths: list[str], when: str = "", restored_check: str | None = None) -> TextPart:
    """The harness note saying files changed under the session (a standing check no longer holds).
    `restored_check`: a rewind put back exactly the tree that check (a part id) passed on: it stands."""
    listed = ", ".join(sorted(paths))
    if restored_check is None:
        return TextPart(text=f"[note from lsp-agent] Changed outside the agent: {listed}. [stale: changed outside "
                             f"the agent{when}; re-read before editing] Earlier reads of these files are stale; "
                             "re-read before editing, and verify again.",
                        synthetic=True, metadata={EXTERNAL_CHANGE: sorted(paths)})
    return TextPart(text=f"[note from lsp-agent] A rewind put back: {listed}. [stale: restored{when}; re-read "
                         "before editing] Earlier reads of these files are stale; re-read before editing. The "
                         "files are exactly those the last passing check saw, so that check holds again.",
                    synthetic=True, metadata={EXTERNAL_CHANGE: sorted(paths), RESTORED_CHECK: restored_check})


@dataclass(frozen=True)
class ModelFacts:
    """What the front end resolved about the model (registry + user declarations)."""

    name: str = "unknown"
    info: ModelInfo = field(default_factory=ModelInfo)
    known: bool = False
    protocol: str = "chat"


@dataclass(frozen=True)
class ModelChoice:
    """A model chosen for one run (`Agent.start(model=...)`): its settings, provider and facts."""

    settings: Settings
    provider: Provider
    facts: ModelFacts


@dataclass
class Environment:
    """What a session needs from the outside world: the ports and shared services."""

    root: Path
    settings: Settings
    store: Store
    registry: ToolRegistry
    provider: Provider
    documents: DocumentSource
    applier: EditApplier
    sink: EventSink = field(default_factory=NullSink)
    #: opens a generation's trace (headless: JSONL files in the state directory); None: no traces
    traces: TraceOpener | None = None
    model: ModelFacts = field(default_factory=ModelFacts)
    skills: SkillsSource = field(default_factory=NoSkills)
    #: present when a long-lived front end steers generations (the language server)
    steering: Steering | None = None
    #: the configured MCP servers (None: none configured); their tools join per request
    mcp: ToolServers | None = None
    #: the tools one request offers, given the history (MCP tools, tool_search); None: the registry
    tool_view: Callable[[Environment, list[Message]], ToolRegistry] | None = None
    #: asks the user before calls the approval policy names (default: nobody, so every ask is denied)
    approver: Approver = field(default_factory=DenyAll)
    #: which command lines the controller lets through (None: none; the front end supplies the rules)
    command_policy: CommandPolicy | None = None
    #: which changed paths Git ignores, for write detection (None: every change counts)
    ignored_paths: IgnoredPaths | None = None
    #: records the workspace around each step that may write, for rewind (None: no checkpoints)
    checkpoints: StepCheckpoints | None = None
    #: no watcher reports outside edits (every front end but the language server): a run compares the
    #: workspace with what its latest check saw before it declares the verification
    recheck_outside: bool = False
    #: the editor's language intelligence, for the editor-query tools (None: no editor answers queries)
    editor: EditorQueries | None = None


class RunningGeneration(Protocol):
    """What a session's callers ask of the generation running in it (core/loop.py's `Generation`,
    which imports this module: the session names only what it uses)."""

    @property
    def id(self) -> str: ...

    @property
    def steps(self) -> int: ...

    @property
    def max_steps(self) -> int: ...

    @property
    def ended(self) -> bool: ...

    def cancel(self) -> None: ...


class AgentSession:
    def __init__(self, env: Environment, session_id: str | None = None, title: str = "") -> None:
        self.env = env
        self.files = FileTracker()
        self.gate = Gate()
        self.active: RunningGeneration | None = None
        self.pending_notes: list[TextPart] = []
        #: the settings values the model last heard of (loaded from the store's replay events)
        self.announced_settings: dict[str, Any] | None = None
        #: the skills announcement the model view holds, kept up to date incrementally
        self.skills_seen = SkillsSeen()
        #: the project instructions announcement the model view holds
        self.instructions_seen = SkillsSeen(INSTRUCTIONS)
        #: instruction files last reported unreadable (each problem is shown once, not every step)
        self.instruction_problems: list[str] = []
        #: the previous request's bytes: each request should extend it (prefix caching)
        self.requests = RequestBytes()
        #: the compact tool specs last sent and their digest (see Generation._tools_digest)
        self.sent_tools: tuple[list[ToolSpec], str] = ([], "")
        #: `allow_session` grants (exact keys, core/approval.py `grant_of`); a resumed session keeps its own
        self.approvals: set[str] = set()
        #: a generation ended because the store refused a write (see repair_after_fault)
        self.store_faulted = False
        #: stored messages whose refused calls' arguments were omitted when loaded, by id: the pages a
        #: client reads show what the model is sent, not the rows' oversized arguments
        self.bounded_on_load: dict[str, Message] = {}
        if session_id is None:
            self.id = ids.session_id()
            env.store.create_session(self.id, str(env.root), env.settings.model, title)
            self.history: list[Message] = []
            self.context = ContextState()
        else:
            if env.store.session(session_id) is None:
                raise KeyError(session_id)
            self.id = session_id
            self._load()
            if unanswered_calls(self.history):
                self._repair_if_free()

    def _repair_if_free(self) -> None:
        # Only a lease holder repairs: a call left unanswered may be running in another process right
        # now (another editor window on this folder), and must not get a second result. Loading writes
        # nothing otherwise, so reading a session never waits for the store's write lock.
        try:
            with self.leases.held_briefly(self.id) as held:
                if held:
                    self.repair()
        except StoreUnavailable as exc:  # locked, full: read as stored; a run here repairs it
            log.warning("session %s: not repaired on load (%s); the next run here repairs it", self.id, exc.message)

    @property
    def leases(self) -> SessionLeases:
        """Whether this process may write the session now (core/lease.py), under the current settings.
        Made on each use: an object kept here that called back into the session would be a reference
        cycle, and a cycle keeps a dropped session's whole history alive until a GC pass."""
        limits = self.env.settings.limits
        return SessionLeases(self.env.store, lambda: limits.session_lease_s)

    def _load(self) -> None:
        # A session stored before refused calls were bounded may hold one too large to ever send.
        stored = self.env.store.messages(self.id)
        self.history = bounded_history(stored, self.env.settings.limits.rejected_args_chars)
        self.bounded_on_load = {kept.id: kept for kept, row in zip(self.history, stored, strict=True)
                                if kept is not row}
        self.context = ContextState.load(self.env.store, self.id, self.history)
        self.approvals.clear()  # in place: a generation's approval desk holds this set
        self.approvals.update(remembered(self.env.store, self.id))

    def catch_up(self) -> None:
        """With the lease taken: the record in memory becomes the store's when another process wrote
        the session since this one loaded it (what the model was told is then learnt again, as after a
        restart), and the calls a dead holder left unanswered are answered."""
        if self.env.store.messages(self.id, after_seq=len(self.history), limit=1):
            log.info("session %s: another process wrote it since it was loaded here; reloading", self.id)
            self._load()
            self.files = FileTracker()
            self.announced_settings = None
            self.skills_seen = SkillsSeen()
            self.instructions_seen = SkillsSeen(INSTRUCTIONS)
            self.requests = RequestBytes()
            self.sent_tools = ([], "")
        if self.store_faulted:  # this process's own run lost results to the store: said so, not "a restart"
            self.repair_after_fault()
        else:
            self.repair()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the lease (or refuse `session_busy`) and catch up, for writes outside a generation
        (a compaction or handoff asked for while the session is idle)."""
        took = self.leases.take(self.id)
        try:
            self.catch_up()
            yield
        finally:
            if took:
                self.leases.release(self.id)

    def repair_after_fault(self) -> None:
        """After a generation the store failed under: calls it stored may lack the results the store
        refused. They are answered (stored first, like every message) before anything is sent to the
        model again; while the store still refuses, this raises StoreUnavailable and nothing is sent."""
        if self.store_faulted:
            self.repair(store_fault=True)
            self.store_faulted = False

    def repair(self, *, store_fault: bool = False) -> int:
        """Answer the tool calls a dead process left without results (see core/repair.py), so the
        history is valid for every provider. Written once: afterwards every call has its result."""
        repairs = interrupted_results(self.history, self.env.registry, store_fault=store_fault)
        cause = "lost their results to a store fault" if store_fault else "were interrupted by a restart"
        for message in repairs:
            log.warning("session %s: %d tool call(s) of step %s %s; answered as such",
                        self.id, len(message.parts), message.step, cause)
            self.append(message)
        return len(repairs)

    def context_view(self) -> list[Message]:
        """The history the model sees: after the latest compaction, with folded results shortened.
        `history` itself stays complete (and so does the store)."""
        return self.context.views.view(self.history, self.context.folded)

    def note_external_change(self, paths: list[str], restored_check: str | None = None) -> None:
        """Files changed outside the agent: earlier reads are stale and a check made before is
        no longer evidence. Recorded as a harness note (appended, so the prefix stays stable);
        while a step is in flight it waits for the step boundary."""
        if not paths:
            return
        self.files.reread_required.update(p for p in paths if p in self.files.read_steps)
        when = f" at step {self.active.steps}" if self.active is not None else ""
        self.pending_notes.append(external_change_note(paths, when, restored_check))
        if self.active is None:
            self.flush_notes()

    def flush_notes(self, generation: str | None = None) -> None:
        if not self.pending_notes:
            return
        if self.active is not None:  # the running generation holds the lease
            self._append_notes(generation)
            return
        with self.leases.held_briefly(self.id) as held:
            if held:  # else they wait for this process's next run here
                self._append_notes(generation)

    def _append_notes(self, generation: str | None) -> None:
        notes, self.pending_notes = self.pending_notes, []
        self.append(Message(role=Role.USER, parts=list(notes), generation=generation))

    def append(self, message: Message) -> None:
        """Persist first, then remember: the record never lags behind what the model saw."""
        self.env.store.append_message(self.id, message)
        self.history.append(message)

    def record_prompt(self, generation: str, prompt: Message, claim_item: str | None = None) -> None:
        """The prompt, the claimed queue row and the busy mark, in one store transaction."""
        self.env.store.begin_generation(self.id, generation, prompt, claim_item)
        self.history.append(prompt)

    def record_correction(self, correction: PendingCorrection, message: Message) -> None:
        """Raises StaleGeneration / RowChanged (nothing written) when the generation moved on."""
        self.env.store.apply_correction(correction, message)
        self.history.append(message)
