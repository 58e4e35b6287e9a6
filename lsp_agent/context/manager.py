"""Keeping each request within the budget: fold, then compact, else stop with a clear error.

`ContextState` lives on the session (folded parts, the one-compaction-in-flight guard, the
provider's token calibration). `ContextManager` is made per request by the loop (and by the
Agent for an on-demand compaction of an idle session): it derives the model-visible view,
counts it, folds in batches past `fold_at`, compacts past `compact_at` (or when asked), and
records every fold, compaction and repair as a NoticeEvent and a replay event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from lsp_agent.context.budget import Budget
from lsp_agent.context.compaction import (
    Item,
    check_summary,
    compaction_prompt,
    harness_summary,
    plan_cut,
    required_items,
    touched_files,
)
from lsp_agent.context.folding import fold_all, fold_batch
from lsp_agent.context.view import COMPACTION, compaction_of
from lsp_agent.domain.events import NoticeEvent
from lsp_agent.domain.history import REPLACED_TURNS, Message, Role, TextPart, Usage, assistant_turns
from lsp_agent.domain.ports import AssistantReply, ModelRequest

if TYPE_CHECKING:
    from lsp_agent.context.session_port import ContextSession

__all__ = ["Ask", "CompactionOutcome", "ContextManager", "ContextOverflow"]

#: Asks the model once (no tools run) for a harness purpose ("compaction", "handoff").
Ask = Callable[[ModelRequest, str], Awaitable[AssistantReply]]
#: The kept tail may use at most this share of the compaction threshold; older messages go first.
TAIL_SHARE = 0.5
COMPACTION_MARKER = "[lsp-agent compaction"


class ContextOverflow(Exception):
    """The request cannot be brought within the budget: the run stops with `error`, never truncates."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class CompactionOutcome:
    status: Literal["compacted", "nothing_to_compact", "freed_too_little", "in_progress"]
    message: str
    seq: int = 0
    summary_message_id: str | None = None
    replaced_messages: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    repaired: list[Item] = field(default_factory=list)
    source: Literal["model", "harness"] | None = None
    usage: Usage | None = None

    def wire(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, "seq": self.seq,
                "summaryMessageID": self.summary_message_id, "replacedMessages": self.replaced_messages,
                "tokensBefore": self.tokens_before, "tokensAfter": self.tokens_after,
                "repaired": [i.wire() for i in self.repaired], "source": self.source}


def _reads_in(messages: Sequence[Message]) -> set[str]:
    return {str(p) for m in messages for r in m.tool_results() if r.ok for p in r.metadata.get("read") or []}


#: who wrote a compaction summary
Source = Literal["model", "harness"]


@dataclass(frozen=True)
class _Plan:
    """One compaction's cut: `view[:cut]` is replaced by the summary, `view[cut:]` is kept verbatim."""

    view: list[Message]
    #: each view message's token estimate
    sizes: list[int]
    cut: int
    #: the stored messages the summary replaces, earlier summaries left out (their originals are here)
    originals: list[Message]
    #: what the summary must keep
    items: list[Item]
    seq: int

    @property
    def replaced(self) -> list[Message]:
        return self.view[:self.cut]

    @property
    def kept(self) -> list[Message]:
        return self.view[self.cut:]

    @property
    def first(self) -> str:
        return next((m.id for m in self.replaced if compaction_of(m) is None), self.view[0].id)

    @property
    def last(self) -> str:
        return self.view[self.cut - 1].id

    @property
    def keep_from(self) -> str:
        return self.view[self.cut].id


class ContextManager:
    def __init__(self, session: ContextSession, ask: Ask, generation: str = "", step: int = 0) -> None:
        self.session = session
        self.env = session.env
        self.state = session.context
        self.ask = ask
        self.generation = generation
        self.step = step

    # --- facts -------------------------------------------------------------------------------

    def budget(self) -> Budget:
        return Budget.of(self.env.settings, self.env.model.info.context_window)

    def view(self) -> list[Message]:
        return self.session.context_view()

    def tokens(self, request: ModelRequest) -> int:
        return self.state.counter.tokens(request)

    def _notice(self, kind: str, message: str, data: dict[str, Any]) -> None:
        self.env.sink.emit(NoticeEvent(session_id=self.session.id, generation=self.generation, kind=kind,
                                       message=message, data=data))

    def _record(self, kind: str, data: dict[str, Any]) -> None:
        self.env.store.record_event(self.session.id, kind, {"generation": self.generation or None,
                                                            "step": self.step, **data})

    # --- keeping a request within the budget -----------------------------------------------------

    async def fit(self, build: Callable[[], ModelRequest]) -> ModelRequest:
        """The request to send: folded and compacted as needed. Raises ContextOverflow when it
        cannot be brought within the budget (compaction off, or freeing too little)."""
        config = self.env.settings.compaction
        budget = self.budget()
        request = build()
        tokens = self.tokens(request)
        if config.fold and tokens > budget.fold_limit and self.fold(tokens, budget):
            await asyncio.sleep(0)  # a fold and a rebuild are one tick's work: let the server answer
            request = build()
            tokens = self.tokens(request)
        manual = self.state.compact_requested
        if manual or (config.auto and tokens > budget.compact_limit):
            self.state.compact_requested = False
            await asyncio.sleep(0)
            outcome = await self.compact(request, "manual" if manual else "auto", tokens)
            if outcome.status == "compacted":
                await asyncio.sleep(0)
                request = build()
                tokens = self.tokens(request)
            elif outcome.status == "freed_too_little" and not manual:
                raise ContextOverflow("compaction_ineffective", f"{outcome.message} The run stops instead of "
                                      "compacting again and again; start a new session (agent/handoff) or "
                                      "raise the context window.")
        if tokens > budget.tokens:
            why = ("automatic compaction is off (compaction.auto = false)" if not config.auto
                   else "nothing older is left to compact")
            message = (f"context overflow: the next request needs about {tokens} tokens, over the budget of "
                       f"{budget.tokens} ({budget.window}-token context window minus {budget.reserve} reserved for "
                       f"the reply), and {why}. Nothing was truncated. Compact with agent/compact, start a new "
                       "session (agent/handoff), or set compaction.auto = true.")
            self._record("context.overflow", {"tokens": tokens, "budget": budget.wire(), "auto": config.auto})
            raise ContextOverflow("context_overflow", message)
        return request

    def fold(self, tokens: int, budget: Budget) -> bool:
        """Fold one batch: every eligible old tool result at once, when that frees enough."""
        config = self.env.settings.compaction
        view = self.view()
        batch = fold_batch(view, self.state.folded, config.keep_recent_messages, config.fold_min_chars)
        freed = self.state.counter.calibration.scale(batch.freed_chars // 4)
        # A small batch is not worth a changed prefix: wait until it is large, or compact instead.
        if not batch.placeholders or freed < config.fold_min_freed * budget.tokens:
            return False
        self.state.folded.update(batch.placeholders)
        after = tokens - freed
        names = sorted({p.name for m in view for p in m.tool_results() if p.id in batch.placeholders})
        message = (f"folded {len(batch.placeholders)} old tool results ({', '.join(names)}) into one-line "
                   f"placeholders: about {tokens} → {after} tokens of the {budget.tokens}-token budget; the "
                   "results stay in the session store (re-read or re-run to see them again)")
        data = {"parts": sorted(batch.placeholders), "count": len(batch.placeholders), "tokensBefore": tokens,
                "tokensAfter": after, "budget": budget.wire(), "firstChangedMessage": batch.first_message,
                "messages": len(view)}
        self._record("context.fold", data)
        self._notice("context_fold", message, data)
        return True

    async def compact(self, request: ModelRequest, trigger: str, tokens: int | None = None) -> CompactionOutcome:
        """Replace the older history by a checked summary (guarded: one per session at a time)."""
        if self.state.compacting:
            return CompactionOutcome("in_progress", "a compaction of this session is already running")
        self.state.compacting = True
        try:
            return await self._compact(request, trigger, self.tokens(request) if tokens is None else tokens)
        finally:
            self.state.compacting = False

    async def _compact(self, request: ModelRequest, trigger: str, before: int) -> CompactionOutcome:
        budget = self.budget()
        plan = self._plan(budget)
        if plan is None:
            return self._nothing_to_compact(trigger, before)
        reply = await self._ask_for_summary(request, plan, budget)
        source, checked, missing = self._checked_summary(reply, plan)
        marker = self._marker(plan, trigger, source, checked, missing)
        after = self._tokens_after(request, plan, marker)
        outcome = CompactionOutcome("compacted", "", plan.seq, marker.id, plan.cut, before, after, missing, source,
                                    reply.usage)
        data = {"seq": plan.seq, "trigger": trigger,
                "replaced": {"first": plan.first, "last": plan.last, "count": plan.cut},
                "keepFrom": plan.keep_from, "tokensBefore": before, "tokensAfter": after, "budget": budget.wire(),
                "source": source, "items": len(plan.items), "repaired": [i.wire() for i in missing]}
        if self._frees_too_little(before, after, budget):
            return self._refuse(outcome, data, budget)
        self._apply(plan, marker)
        self._announce(outcome, trigger, data)
        return outcome

    def _plan(self, budget: Budget) -> _Plan | None:
        """Which older messages the summary replaces (None: none can be), and what it must keep."""
        view = self.view()
        sizes = [self.state.counter.message(m) for m in view]
        tail_limit = int(budget.compact_limit * TAIL_SHARE)
        cut = plan_cut(view, self.env.settings.compaction.keep_recent_messages, sizes, tail_limit)
        if cut is None:
            return None
        history = self.session.history
        stored = next(i for i, m in enumerate(history) if m.id == view[cut].id)
        originals = [m for m in history[:stored] if compaction_of(m) is None]
        seq = 1 + sum(1 for m in history if compaction_of(m) is not None)
        return _Plan(view, sizes, cut, originals, required_items(originals, self.env.root), seq)

    def _nothing_to_compact(self, trigger: str, before: int) -> CompactionOutcome:
        outcome = CompactionOutcome("nothing_to_compact", "nothing older than the recent messages to compact",
                                    tokens_before=before, tokens_after=before)
        if trigger == "manual":  # the user asked: say why nothing happened (auto retries stay quiet)
            self._record("context.compaction", {"trigger": trigger, "applied": False,
                                                "status": outcome.status, "tokensBefore": before})
            self._notice("context_compaction_stopped", outcome.message, {"trigger": trigger})
        return outcome

    async def _ask_for_summary(self, request: ModelRequest, plan: _Plan, budget: Budget) -> AssistantReply:
        """The model's summary; an empty reply when even the slimmed request would not fit."""
        counter = self.state.counter
        prompt = compaction_prompt(f"{COMPACTION_MARKER} #{plan.seq}]", plan.cut, plan.items,
                                   "Summarize this conversation so far.")
        ask = request.model_copy(update={"tail": [prompt]})
        if counter.tokens(ask) > budget.tokens:
            # The summary request itself must fit: raw output of the replaced part is dropped anyway.
            ask = ask.model_copy(update={"messages": [*fold_all(plan.replaced), *plan.kept]})
        if counter.tokens(ask) <= budget.tokens:
            return await self.ask(ask, "compaction")
        return AssistantReply()

    def _checked_summary(self, reply: AssistantReply, plan: _Plan) -> tuple[Source, str, list[Item]]:
        """Who wrote the summary, the summary with every missing required item appended, and those items."""
        text = reply.text.strip()
        source: Source = "model" if text else "harness"
        if not text:
            text = harness_summary(plan.items, touched_files(plan.originals))
        checked, missing = check_summary(text, plan.items)
        return source, checked, missing

    def _marker(self, plan: _Plan, trigger: str, source: Source, checked: str, missing: list[Item]) -> Message:
        """The summary message that stands in for the replaced ones in every later view."""
        recover = self.env.settings.experimental.context_recovery
        header = (f"[compaction summary #{plan.seq} by lsp-agent: it replaces the {plan.cut} earlier messages of "
                  "this conversation, whose originals stay in the session store"
                  + ("; context_recover reads them by the [message/part] pointers below" if recover else "")
                  + ".]")
        body = (f"{header}\n{checked}\n\n[after this compaction, read a file again before editing it]")
        info = {"seq": plan.seq, "trigger": trigger, "first": plan.first, "last": plan.last,
                "keepFrom": plan.keep_from, "replacedMessages": plan.cut, "source": source,
                "items": [i.wire() for i in plan.items], "repaired": [i.pointer for i in missing]}
        return Message(role=Role.USER, generation=self.generation or None, step=self.step or None, parts=[
            TextPart(text=body, synthetic=True,
                     metadata={COMPACTION: info, REPLACED_TURNS: assistant_turns(plan.replaced)})])

    def _tokens_after(self, request: ModelRequest, plan: _Plan, marker: Message) -> int:
        counter = self.state.counter
        return counter.calibration.scale(counter.static(request.instructions, request.tools)
                                         + counter.message(marker) + sum(plan.sizes[plan.cut:])
                                         + counter.tail(request))

    def _frees_too_little(self, before: int, after: int, budget: Budget) -> bool:
        config = self.env.settings.compaction
        return before - after < config.min_freed_ratio * before or after > budget.compact_limit

    def _refuse(self, outcome: CompactionOutcome, data: dict[str, Any], budget: Budget) -> CompactionOutcome:
        config = self.env.settings.compaction
        outcome.status = "freed_too_little"
        outcome.message = (f"compaction #{outcome.seq} would free too little: about {outcome.tokens_before} → "
                           f"{outcome.tokens_after} tokens (at least {config.min_freed_ratio:.0%} must be freed, "
                           f"and the result must stay under {budget.compact_limit}); it was not applied.")
        self._record("context.compaction", {**data, "applied": False, "status": outcome.status})
        self._notice("context_compaction_stopped", outcome.message, data)
        return outcome

    def _apply(self, plan: _Plan, marker: Message) -> None:
        """Store the summary; a file read only in the replaced part must be read again before an edit."""
        self.session.append(marker)
        tail_reads = _reads_in(plan.kept)
        files = self.session.files
        files.reread_required.update(p for p in touched_files(plan.originals) if p not in tail_reads)
        files.reread_required.update(p for p in files.read_steps if p not in tail_reads)

    def _announce(self, outcome: CompactionOutcome, trigger: str, data: dict[str, Any]) -> None:
        seq = outcome.seq
        outcome.message = (f"compaction #{seq} ({trigger}): {outcome.replaced_messages} older messages replaced "
                           f"by a checked summary, about {outcome.tokens_before} → {outcome.tokens_after} tokens; "
                           "originals kept in the store")
        self._record("context.compaction", {**data, "applied": True, "summaryMessageID": outcome.summary_message_id})
        self._notice("context_compaction", outcome.message, data)
        if outcome.repaired:
            items = [i.wire() for i in outcome.repaired]
            repaired = ", ".join(f"{i.kind.replace('_', ' ')} [{i.pointer}]" for i in outcome.repaired)
            self._record("context.repair", {"seq": seq, "items": items})
            self._notice("compaction_repair", f"the summary of compaction #{seq} missed {len(outcome.repaired)} "
                                              f"required item(s); restored with their pointers: {repaired}",
                         {"seq": seq, "items": items})
