"""The agent loop: build the request, stream the reply, check and run the calls,
repeat — until a typed stop reason. The model proposes; the controller decides.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from lsp_agent.context.handoff import prepare_handoff, same_failure_streak
from lsp_agent.context.instructions import instructions_for, mode_note, specs_for
from lsp_agent.context.manager import ContextManager, ContextOverflow
from lsp_agent.context.project_instructions import read_project_instructions
from lsp_agent.context.reminders import reminders
from lsp_agent.context.stale import stale_note
from lsp_agent.core import announce, controller
from lsp_agent.core.approval import ApprovalDesk
from lsp_agent.core.cancel import cancel_signal
from lsp_agent.core.capabilities import (
    CONTEXT_PACK,
    CapabilityResolution,
    request_hashes,
    resolve_capabilities,
)
from lsp_agent.core.deltas import DeltaCoalescer
from lsp_agent.core.dispatch import CallRunner
from lsp_agent.core.errors import AgentError
from lsp_agent.core.loop_guard import LoopGuard
from lsp_agent.core.outside_edits import CheckSnapshot
from lsp_agent.core.rejected_calls import bounded_call
from lsp_agent.core.session import AgentSession, Environment
from lsp_agent.core.storage import StoreUnavailable
from lsp_agent.core.tool_registry import ToolRegistry
from lsp_agent.core.tools import ToolContext
from lsp_agent.domain import bounded_json, events, verification
from lsp_agent.domain.appendonly import same_objects
from lsp_agent.domain.events import StopReason
from lsp_agent.domain.history import (
    ErrorKind,
    Message,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from lsp_agent.domain.ids import message_id as _new_message_id
from lsp_agent.domain.ids import part_id as _new_part_id
from lsp_agent.domain.ports import (
    AssistantReply,
    ModelRequest,
    ProviderError,
    ProviderErrorKind,
    ProviderEvent,
    ReplyDone,
    TextDelta,
    Trace,
)

log = logging.getLogger(__name__)

def _despite_store(write: Callable[..., None], *args: Any) -> None:
    """A write of the run's end: a store that refuses it was already reported with the run's end."""
    try:
        write(*args)
    except StoreUnavailable as exc:
        log.warning("%s", exc.message)


def _tokens(usage: Usage, unknown: bool = False) -> events.Tokens:
    return events.Tokens(input=usage.input, output=usage.output, reasoning=usage.reasoning,
                         cache={"read": usage.cache_read, "write": 0}, unknown=unknown)


def _cut_short_note(calls: int) -> str:
    what = f" Its {calls} tool call(s) were not run (their arguments may be incomplete)." if calls else ""
    return ("[note from lsp-agent] Your previous reply was cut off by the output-token limit." + what +
            " Continue from where it stopped in smaller pieces: one tool call at a time, shorter edits "
            "(several small apply_patch calls instead of one large one), less text.")


def _input_of(call: ToolCallPart) -> dict[str, Any] | str:
    try:
        parsed = bounded_json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return call.arguments
    return parsed if isinstance(parsed, dict) else call.arguments


def consecutive_tool_failures(history: list[Message]) -> int:
    """Failed tool results in a row since the latest user message (a success resets it)."""
    count = 0
    for message in reversed(history):
        if message.role is Role.USER and any(isinstance(p, TextPart) and not p.synthetic for p in message.parts):
            break
        for part in reversed(message.tool_results()):
            if part.ok:
                return count
            count += 1
    return count


def resolve_for(env: Environment, history: list[Message]) -> CapabilityResolution:
    facts, limits = env.model, env.settings.limits
    return resolve_capabilities(facts.info, facts.known, consecutive_tool_failures(history),
                                user_effort=None, settings_effort=env.settings.reasoning_effort,
                                protocol=facts.protocol, pack_min_context=limits.context_pack_min_context,
                                pack_max_tokens=limits.context_pack_max_tokens,
                                escalate_after=limits.escalate_after_failures)


def make_request(env: Environment, resolution: CapabilityResolution, messages: list[Message],
                 tail: list[str] | None = None, tools: ToolRegistry | None = None) -> ModelRequest:
    """Static content first (instructions, tools), then the model-visible history, then the tail."""
    profile = env.settings.instruction_profile
    instructions = (instructions_for(profile) + mode_note(env.settings.mode)
                    + (f"\n{CONTEXT_PACK}" if resolution.context_pack else ""))
    tools = tools or env.registry
    # Constructed, not validated: every value is already typed, and validating the history re-checked
    # every message of it at every step.
    return ModelRequest.model_construct(model=env.settings.model, instructions=instructions,
                                        tools=specs_for(profile, tools.specs()), messages=messages,
                                        tail=tail or [], reasoning_effort=resolution.reasoning_effort)


async def collect_reply(stream: AsyncIterator[ProviderEvent],
                        on_delta: Callable[[str, str], None] | None = None) -> AssistantReply:
    """Consume a provider stream up to its ReplyDone; each delta goes to `on_delta(kind, text)`
    ("text" or "reasoning"). A stream that ends without a reply is a STREAM_CUT ProviderError.
    The stream is read to its end, past the reply: a generator left suspended is finished later by
    the event loop's finaliser, in a task of its own (a wake-up through the self-pipe every step)."""
    reply: AssistantReply | None = None
    async for item in stream:
        if reply is not None:
            continue  # nothing after the reply counts
        if isinstance(item, ReplyDone):
            reply = item.reply
        elif on_delta is not None:
            on_delta("text" if isinstance(item, TextDelta) else "reasoning", item.text)
    if reply is None:
        raise ProviderError(ProviderErrorKind.STREAM_CUT, "the provider ended the stream without a complete reply")
    return reply


async def ask_once(env: Environment, request: ModelRequest) -> AssistantReply:
    """One reply, collected without streaming it anywhere (harness requests: summaries, handoff notes)."""
    return await collect_reply(env.provider.stream(request, env.provider.encode_request(request)))


class Generation:
    """One run of the loop, started by a user message and ended by a stop reason."""

    def __init__(self, session: AgentSession, max_steps: int | None = None) -> None:
        self.session = session
        self.env = session.env
        self.id = str(uuid.uuid4())
        self.max_steps = max_steps or self.env.settings.max_steps
        self.steps = 0
        self.tool_calls = 0
        self.tool_errors = 0
        self.usage = Usage()
        #: a reply came without usage: the token counts are shown as unknown, not as 0
        self.usage_unknown = False
        self.files_changed: dict[str, None] = {}
        self.cancel_event = asyncio.Event()
        limits = self.env.settings.limits
        self.guard = LoopGuard(limits.loop_warn_repeats, limits.loop_stop_repeats)
        # The sink's own emit, not self.emit: a bound method of this generation held by its parts
        # is a reference cycle, and a cycle kept the session's whole history alive until a GC pass.
        emit = self.env.sink.emit
        desk = ApprovalDesk(self.env.settings.approval_policy, self.env.approver,
                            self.env.settings.approval_timeout_s, self.env.store, session.id, self.id,
                            self.cancel_event, emit, session.approvals,
                            self.env.settings.approvals.rules())
        self.calls = CallRunner(session.gate, self.cancel_event, emit, self._base(),
                                self.env.settings.limits.result_chars, desk)
        self._stream_task: asyncio.Future[AssistantReply] | None = None
        self._assistant_message_id = ""
        #: the controller's verdicts on this step's calls, by part id (reached before the reply was stored)
        self._verdicts: dict[str, controller.Accepted | controller.Rejection] = {}
        #: this step's tool list (built with its request; the step's calls are checked against it)
        self.tools: ToolRegistry = self.env.registry
        self.begun = False
        self.prompt_id = ""  # the stored user message this generation starts with, once begun
        #: this generation took the session's lease when it began (and gives it back when it ends)
        self._took_lease = False
        #: renews the lease while the generation runs
        self._heartbeat: asyncio.Future[None] | None = None
        #: the end is written (`_close`): by the run_finish, or by `run` when the loop raised
        self._closed = False
        #: announces the rejections of corrections this run ended before applying (after its run_finish)
        self._rejections: Callable[[], None] | None = None
        self.ended = False
        self.stop_reason: StopReason | None = None
        #: set when the run ended by handing off to a fresh session (the Agent starts it)
        self.handoff_to: str | None = None
        #: sessions an earlier generation of the same run worked in (headless continues after a handoff)
        self.previous_session_ids: list[str] = []
        self.trace: Trace | None = None
        self.check_snapshot = (CheckSnapshot(self.env.root, self.env.ignored_paths)
                               if self.env.recheck_outside else None)
        if self.env.traces is not None:
            self.trace = self.env.traces(session.id, self.id)

    def carry_over(self, previous: Generation) -> None:
        """Continue the run `previous` handed off: the step budget, counts, tokens and files carry over,
        so this generation's run_finish describes the whole run."""
        self.steps, self.tool_calls, self.tool_errors = previous.steps, previous.tool_calls, previous.tool_errors
        self.usage = previous.usage
        self.files_changed = dict(previous.files_changed)
        self.previous_session_ids = [*previous.previous_session_ids, previous.session.id]

    # --- control ------------------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop at the earliest safe point: the stream is dropped, running processes are
        killed (partial output kept), calls still waiting at the gate never run."""
        self.cancel_event.set()
        if self._stream_task is not None:
            self._stream_task.cancel()
        self.calls.cancel_waiting()

    def emit(self, event: events.SinkEvent) -> None:
        self.env.sink.emit(event)

    def _base(self) -> dict[str, str]:
        return {"session_id": self.session.id, "generation": self.id}

    # --- the loop -----------------------------------------------------------------------------

    def begin(self, prompt: str, claim_item: str | None = None) -> None:
        """Take the session's lease (an AgentError `session_busy`, and nothing written, while another live
        process holds it), catch up with the store, then write the prompt and mark the session busy,
        synchronously, in one store transaction that also marks the queued row `claim_item` sent
        (RowChanged, and nothing written, if it changed)."""
        session = self.session
        try:  # one writer per session: another live process running it refuses this run (session_busy)
            self._took_lease = session.leases.take(session.id)
        except AgentError:
            if self.trace is not None:
                self.trace.close()
            raise
        try:
            session.catch_up()  # another process may have written it since this one loaded it
            self._record_prompt(prompt, claim_item)
        except BaseException:
            self._give_back_lease()
            raise
        self.begun = True

    def _give_back_lease(self) -> None:
        if self._took_lease:
            self._took_lease = False
            # A store fault here is reported with the run's end; the next run here takes the lease again.
            _despite_store(self.session.leases.release, self.session.id)

    def _record_prompt(self, prompt: str, claim_item: str | None) -> None:
        session = self.session
        session.repair_after_fault()
        prompt_message = Message(role=Role.USER, parts=[TextPart(text=prompt)], generation=self.id)
        if not session.history:
            # A new session opens with the project instructions: right after the static instructions,
            # before the task, where every later request repeats them byte for byte.
            self._announce_instructions()
            session.flush_notes(self.id)
        session.active = self
        try:
            session.record_prompt(self.id, prompt_message, claim_item)
        except BaseException:
            session.active = None
            raise
        self.prompt_id = prompt_message.id

    async def run(self, prompt: str | None = None) -> events.RunFinish:
        """Run to a stop reason (after `begin`, or beginning with `prompt` now)."""
        if prompt is not None:
            self.begin(prompt)
        assert self.begun, "begin() the generation or pass a prompt"
        session = self.session
        token = cancel_signal.set(self.cancel_event)
        self._heartbeat = asyncio.ensure_future(session.leases.keep(session.id, self.cancel))
        try:
            if self.env.mcp is not None:  # MCP servers start when a session first needs them
                await self.env.mcp.start()
            self._prepare_checkpoints()
            if self.check_snapshot is not None and self._check_stands():
                await self.check_snapshot.take()  # a check from an earlier run: edits from now on are found
            try:
                return await self._loop()
            except StoreUnavailable as exc:
                return self._store_failed(exc)
        finally:
            self.ended = True
            cancel_signal.reset(token)
            try:
                self._close()  # done already when the run ended with a run_finish
                self._announce_rejections()
            finally:
                if self.trace is not None:
                    self.trace.close()

    def _close(self) -> None:
        """The generation's end in the store and the session, once: nothing runs, pending corrections are
        settled, notes written, the lease given back. Before run_finish is shown, so that a client (or
        another process) told the run is over finds the session free."""
        if self._closed:
            return
        self._closed = True
        session = self.session
        try:
            _despite_store(self.env.store.end_generation, session.id, self.id)
            if self.env.steering is not None:
                interrupted = self.stop_reason in (StopReason.CANCELLED, StopReason.ERROR, None)
                self._rejections = self.env.steering.end_generation(session, self.id, interrupted)
            session.active = None
            _despite_store(session.flush_notes)
        finally:  # whatever failed above, the session is not left held (and kept fresh) by a run that ended
            if self._heartbeat is not None:
                # Dropped, not only cancelled: the task holds this generation's cancel (a cycle otherwise).
                self._heartbeat.cancel()
                self._heartbeat = None
            self._give_back_lease()

    def _announce_rejections(self) -> None:
        """The receipts of corrections the run ended before applying, once, after its run_finish."""
        announce, self._rejections = self._rejections, None
        if announce is not None:
            announce()

    def _store_failed(self, exc: StoreUnavailable) -> events.RunFinish:
        """The store refused a write mid-run: the run ends `error` saying why (the user sees it; the
        store may not take even the record of the end). Whatever the refused write carried was never
        added to the history, but calls already stored may lack their results: the session answers
        them before its next generation (`AgentSession.repair_after_fault`)."""
        log.warning("session %s: %s", self.session.id, exc.message)
        self.session.store_faulted = True
        info = events.ErrorInfo(kind=exc.kind.value, message=exc.message)
        self.emit(events.ErrorEvent(**self._base(), error=info))
        return self._finish(StopReason.ERROR, info)

    async def _loop(self) -> events.RunFinish:
        while True:
            if self.cancel_event.is_set():
                return await self._end(StopReason.CANCELLED)
            if self.steps >= self.max_steps:
                return await self._end(StopReason.STEP_LIMIT)
            self._announce_changes()
            self.session.flush_notes(self.id)
            self.steps += 1
            self.emit(events.StepStart(**self._base(), step=self.steps, max_steps=self.max_steps))
            try:
                reply = await self._ask_model()
            except ProviderError as exc:
                info = events.ErrorInfo(kind=exc.kind.value, message=exc.describe(), status=exc.status)
                self.emit(events.ErrorEvent(**self._base(), error=info))
                return await self._end(StopReason.ERROR, info)
            except ContextOverflow as exc:
                info = events.ErrorInfo(kind=exc.kind, message=exc.message)
                self.emit(events.ErrorEvent(**self._base(), error=info))
                return await self._end(StopReason.ERROR, info)
            if reply is None:
                return await self._end(StopReason.CANCELLED)
            if reply.truncated:
                self._cut_short(reply)
                self._step_finished(reply)
                continue  # the model is told and asked to go on in smaller pieces
            results = await self._dispatch(reply.tool_calls) if reply.tool_calls else []
            self._step_finished(reply)
            if self.guard.tripped():
                return await self._end(StopReason.LOOP)
            if results and await self._handed_off():
                return await self._end(StopReason.HANDOFF)
            if self.cancel_event.is_set():
                return await self._end(StopReason.CANCELLED)
            # Corrections land here, after this step's results; one sent as the final reply
            # arrived keeps the generation alive for exactly one more step.
            steering = self.env.steering
            applied = steering.apply_pending(self.session, self.id) if steering is not None else False
            if not results and not applied:
                return await self._end(StopReason.FINAL)

    def _announce_changes(self) -> None:
        """Skills or settings that changed since the model last heard: appended as notes before the
        next request (never edited into the instructions)."""
        self._announce_instructions()
        session, env = self.session, self.env
        current = {"model": env.settings.model, "reasoningEffort": env.settings.reasoning_effort,
                   "maxSteps": env.settings.max_steps, "tools": env.registry.names()}
        if session.announced_settings is None:
            recorded = env.store.events(session.id, announce.SETTINGS_EVENT)
            session.announced_settings = recorded[-1]["values"] if recorded else None
        if session.announced_settings != current:
            if session.announced_settings is not None:
                note = announce.settings_note(session.announced_settings, current)
                if note is not None:
                    session.pending_notes.append(note)
            env.store.record_event(session.id, announce.SETTINGS_EVENT, {"generation": self.id, "values": current})
            session.announced_settings = current
        skills = announce.skills_note(session.context_view(), env.skills.block(), session.pending_notes,
                                      session.skills_seen)
        if skills is not None:
            session.pending_notes.append(skills)

    def _announce_instructions(self) -> None:
        """The project's instruction files, when the model does not have them as they are now (the
        session's start, a change, a compaction that replaced them); shown in the transcript too."""
        session = self.session
        found = read_project_instructions(self.env.root, self.env.settings.limits.instructions_bytes)
        if found.problems != session.instruction_problems:
            session.instruction_problems = list(found.problems)
            for problem in found.problems:
                self.emit(events.NoticeEvent(**self._base(), kind="instructions", message=problem))
        view = session.context_view()
        note = announce.instructions_note(view, found, session.pending_notes, session.instructions_seen)
        if note is None:
            return
        changed = session.instructions_seen.latest(view) is not None
        what = ("Project instructions changed; the model is told: " if changed and found.files else
                "Project instructions removed; the model is told." if changed else
                "Project instructions sent to the model: ")
        self.emit(events.NoticeEvent(**self._base(), kind="instructions", message=what + found.summary(),
                                     data={"files": [{"name": f.name, "bytes": f.size, "cut": f.cut}
                                                     for f in found.files]}))
        session.pending_notes.append(note)

    def capabilities(self) -> CapabilityResolution:
        return resolve_for(self.env, self.session.history)

    def build_request(self, resolution: CapabilityResolution) -> ModelRequest:
        """The model-visible history (compacted, folded) and, with tail_reminders, this step's reminders."""
        session = self.session
        tail = (reminders(session.history, self.steps, self.max_steps, session.files.reread_required)
                if self.env.settings.experimental.tail_reminders else [])
        self.tools = self.env.tool_view(self.env, session.history) if self.env.tool_view else self.env.registry
        return make_request(self.env, resolution, session.context_view(), tail, self.tools)

    def _context(self) -> ContextManager:
        return ContextManager(self.session, self._ask_harness, self.id, self.steps)

    def _record_request(self, request: ModelRequest, resolution: CapabilityResolution,
                        purpose: str = "step") -> bytes:
        """The `llm.request` replay event: decisions and hashes, never prompt bodies or keys."""
        body = self.env.provider.encode_request(request)
        share, body_sha256 = self.session.requests.add(body)
        tokens = self.session.context.counter.tokens(request)
        record: dict[str, Any] = {
            "generation": self.id, "step": self.steps, "model": self.env.model.name,
            "capabilityResolution": resolution.wire(),
            "hashes": request_hashes(body, request.instructions, self._tools_digest(request, body), body_sha256),
            "bytes": len(body), "prefixShare": round(share, 6), "messages": len(request.messages),
            "tokens": tokens,
        }
        if purpose != "step":
            record["purpose"] = purpose
        self.env.store.record_event(self.session.id, "llm.request", record)
        return body

    def _tools_digest(self, request: ModelRequest, body: bytes) -> str:
        """The registry's digest; compact tool specs differ from the registry's, so theirs is read from
        the body — once per tool list (the compact specs are the same objects while it lasts)."""
        if self.env.settings.instruction_profile == "default":
            return self.tools.digest
        known, digest = self.session.sent_tools
        if not same_objects(known, request.tools):
            digest = request_hashes(body)["toolsSha256"]
            self.session.sent_tools = (list(request.tools), digest)
        return digest

    async def _ask_harness(self, request: ModelRequest, purpose: str) -> AssistantReply:
        """A harness request (compaction summary, handoff note): recorded, cancellable, not streamed
        to the user, and no tool it asks for runs."""
        body = self._record_request(request, self.capabilities(), purpose)
        self._stream_task = asyncio.ensure_future(collect_reply(self.env.provider.stream(request, body)))
        try:
            reply = await self._stream_task
        finally:
            self._stream_task = None
        self.usage = self.usage + (reply.usage or Usage())
        return reply

    async def _handed_off(self) -> bool:
        """The same check failed the same way N times in a row: restart in a fresh session."""
        needed = self.env.settings.compaction.handoff_after_same_failures
        if needed <= 0 or self.cancel_event.is_set():
            return False
        latest = self.session.history[-1] if self.session.history else None
        fresh = latest is not None and any(isinstance(p.metadata.get("envelope"), dict) for p in latest.tool_results())
        if not fresh or same_failure_streak(self.session.history) != needed:
            return False
        request = make_request(self.env, self.capabilities(), self.session.context_view(), tools=self.tools)
        try:
            handoff = await prepare_handoff(self.session, request, self._ask_harness,
                                            f"the same check failed the same way {needed} times", self.id, self.steps)
        except ProviderError:
            log.warning("handoff of session %s failed; the run continues", self.session.id, exc_info=True)
            return False
        except asyncio.CancelledError:
            if not self.cancel_event.is_set():
                raise
            return False
        self.handoff_to = handoff.session_id
        return True

    async def _ask_model(self) -> AssistantReply | None:
        """Stream one reply, forwarding deltas; None when cancelled (before or mid-stream)."""
        if self.cancel_event.is_set():  # cancelled while this step started (e.g. its step_start had no reader)
            return None
        resolution = self.capabilities()
        try:
            request = await self._context().fit(lambda: self.build_request(resolution))
        except asyncio.CancelledError:
            if not self.cancel_event.is_set():
                raise
            return None
        counter = self.session.context.counter
        estimated = counter.estimate(request)
        body = self._record_request(request, resolution)
        text_id, reasoning_id = _new_part_id(), _new_part_id()
        streamed: list[str] = []

        def emit_delta(kind: str, text: str) -> None:
            if kind == "text":
                self.emit(events.TextDeltaEvent(**self._base(), part_id=text_id, delta=text))
            else:
                self.emit(events.ReasoningDeltaEvent(**self._base(), part_id=reasoning_id, delta=text))

        deltas = DeltaCoalescer(emit_delta)

        def on_delta(kind: str, text: str) -> None:
            if kind == "text":
                streamed.append(text)
            deltas.add(kind, text)

        async def consume() -> AssistantReply:
            try:
                return await collect_reply(self.env.provider.stream(request, body), on_delta)
            finally:
                deltas.flush()  # what arrived is shown, whatever happens next

        self._stream_task = asyncio.ensure_future(consume())
        try:
            reply = await self._stream_task
            for note in reply.notes:
                self.emit(events.NoticeEvent(**self._base(), kind="provider", message=note))
        except asyncio.CancelledError:
            if not self.cancel_event.is_set():
                raise
            if streamed:  # keep what the user already saw
                self.session.append(Message(role=Role.ASSISTANT, generation=self.id, step=self.steps,
                                            parts=[TextPart(id=text_id, text="".join(streamed))]))
            return None
        finally:
            self._stream_task = None
        self.usage = self.usage + (reply.usage or Usage())
        self.usage_unknown = self.usage_unknown or reply.usage is None
        counter.observe(estimated, reply.usage.input if reply.usage else None)
        parts: list[Any] = []
        parts.extend(reply.reasoning)
        if reply.text:
            parts.append(TextPart(id=text_id, text=reply.text))
        message_id = _new_message_id()
        if reply.tool_calls and not reply.truncated:
            self._check_calls(reply, message_id)
        parts.extend(reply.tool_calls)
        message = Message(id=message_id, role=Role.ASSISTANT, parts=parts, generation=self.id, step=self.steps)
        self.session.append(message)
        for r in reply.reasoning:
            self.emit(events.ReasoningEvent(**self._base(), part=events.TextPartInfo(
                id=r.id, message_id=message.id, text=r.text)))
        if reply.text:
            self.emit(events.TextEvent(**self._base(), part=events.TextPartInfo(
                id=text_id, message_id=message.id, text=reply.text)))
        self._assistant_message_id = message.id
        return reply

    # --- tool calls ---------------------------------------------------------------------------

    def _cut_short(self, reply: AssistantReply) -> None:
        """A reply cut by the output limit: its calls get 'not run' results (so every call has
        its result on the wire) and the model is told, at the next step, to continue smaller."""
        if reply.tool_calls:
            results = [ToolResultPart(call_id=c.call_id, name=c.name, ok=False, error_kind=ErrorKind.CANCELLED,
                                      output="not run: the reply was cut off by the output-token limit "
                                             "before this call was known to be complete")
                       for c in reply.tool_calls]
            stored = Message(role=Role.TOOL, parts=list(results), generation=self.id, step=self.steps)
            self.session.append(stored)
            for call, result in zip(reply.tool_calls, results, strict=True):
                self._record_call(call, result, stored.id)
        message = _cut_short_note(len(reply.tool_calls))
        self.emit(events.NoticeEvent(**self._base(), kind="truncated", message=message))
        self.session.pending_notes.append(TextPart(text=message, synthetic=True))

    def _prepare_checkpoints(self) -> None:
        """A workspace's first checkpoint reads every file: begun now, beside the first model request,
        instead of inside the first step (which then waits only for what is left of it)."""
        if self.env.checkpoints is None or not self.env.settings.checkpoints.enabled:
            return
        self.env.checkpoints.start_baseline()

    def _tool_context(self, message_id: str) -> ToolContext:
        return ToolContext(root=self.env.root, settings=self.env.settings, documents=self.env.documents,
                           applier=self.env.applier, files=self.session.files, step=self.steps,
                           session_id=self.session.id, message_id=message_id,
                           history=self.env.store, cancel=self.cancel_event,
                           command_policy=self.env.command_policy, ignored_paths=self.env.ignored_paths,
                           checkpoints=self.env.checkpoints if self.env.settings.checkpoints.enabled else None,
                           editor=self.env.editor)

    def _check_calls(self, reply: AssistantReply, message_id: str) -> None:
        """The controller's verdicts, before the reply is stored: a refused call's oversized arguments
        are replaced by their size and preview in the reply (so in the history, the events and every
        later request); the verdicts were reached on the originals and are kept for the dispatch."""
        ctx = self._tool_context(message_id)
        limit = self.env.settings.limits.rejected_args_chars
        verdicts: dict[str, controller.Accepted | controller.Rejection] = {}
        kept: list[ToolCallPart] = []
        for call in reply.tool_calls:
            verdict = controller.check(call, self.tools, ctx)
            if isinstance(verdict, controller.Rejection):
                call = bounded_call(call, limit)
            verdicts[call.id] = verdict
            kept.append(call)
        reply.tool_calls = kept
        self._verdicts = verdicts

    async def _dispatch(self, calls: list[ToolCallPart]) -> list[ToolResultPart]:
        ctx = self._tool_context(self._assistant_message_id)
        checked, self._verdicts = self._verdicts, {}
        verdicts = [checked.get(call.id) or controller.check(call, self.tools, ctx) for call in calls]
        tasks = [asyncio.ensure_future(self.calls.run(call, verdict, ctx, self.steps))
                 for call, verdict in zip(calls, verdicts, strict=True)]
        results = list(await asyncio.gather(*tasks))
        if self.check_snapshot is not None and any(isinstance(r.metadata.get("envelope"), dict) for r in results):
            await self.check_snapshot.take()  # the baseline an outside edit is found against
        for call, result in zip(calls, results, strict=True):
            warning = self.guard.warning(self.guard.observe(call))
            if warning:
                result.output = f"{result.output}\n{warning}"
                self.emit(events.NoticeEvent(**self._base(), kind="loop_guard", message=warning))
        stored = Message(role=Role.TOOL, parts=list(results), generation=self.id, step=self.steps)
        self.session.append(stored)
        for call, result in zip(calls, results, strict=True):
            self._record_call(call, result, stored.id)
        note = stale_note(self.session.history, self.session.context.stale)
        if note is not None:  # appended at the next step boundary, never edited into the earlier read
            self.session.pending_notes.append(note)
        return results

    def _record_call(self, call: ToolCallPart, result: ToolResultPart, message_id: str) -> None:
        """`message_id`: the tool message that stores the result. One rule for every event: a part's
        messageID is the message that stores that part (tool_start's call part: the assistant message)."""
        self.tool_calls += 1
        if not result.ok:
            self.tool_errors += 1
        for path in result.metadata.get("written") or []:
            self.files_changed[str(path)] = None
        status: Any = "completed" if result.ok else "error"
        self.emit(events.ToolUse(**self._base(), step=self.steps, part=events.ToolPartInfo(
            id=result.id, message_id=message_id, call_id=call.call_id, tool=call.name,
            state=events.ToolState(status=status, input=_input_of(call), output=result.output,
                                   error_kind=result.error_kind.value if result.error_kind else None,
                                   elapsed_ms=result.elapsed_ms, metadata=result.metadata or None))))
        if self.trace is not None:
            limit = self.env.settings.limits.trace_result_chars
            self.trace.write({"step": self.steps, "tool": call.name, "callID": call.call_id,
                              "args": _input_of(call), "ok": result.ok,
                              "errorKind": result.error_kind.value if result.error_kind else None,
                              "result": result.output[:limit], "ms": result.elapsed_ms})

    # --- endings ------------------------------------------------------------------------------

    def _step_finished(self, reply: AssistantReply) -> None:
        usage = reply.usage or Usage()
        self.emit(events.StepFinish(**self._base(), part=events.StepFinishInfo(
            id=_new_part_id(), step=self.steps,
            reason="length" if reply.truncated else "tool-calls" if reply.tool_calls else "stop",
            tokens=_tokens(usage, reply.usage is None), server_model=reply.server_model)))
        if self.trace is not None:
            self.trace.write({"step": self.steps, "stepFinish": True, "tokens": usage.model_dump()})

    async def _end(self, reason: StopReason, error: events.ErrorInfo | None = None) -> events.RunFinish:
        await self._notice_outside_edits()
        return self._finish(reason, error)

    def _check_stands(self) -> bool:
        return verification.derive(self.session.history).status is not events.VerificationStatus.NOT_RUN

    async def _notice_outside_edits(self) -> None:
        """Without a watcher, an outside edit after the latest check is found here, before the
        verification is declared, and recorded as the server's watcher records one: a harness note
        that makes the check stale with `outside_process`."""
        # Only a standing check can be invalidated; a recorded write already made it stale.
        if self.check_snapshot is None or not self._check_stands():
            return
        paths = await self.check_snapshot.changed_outside()
        if paths:
            self.session.note_external_change(paths)
            self.session.flush_notes(self.id)

    def refused(self, error: AgentError) -> events.RunFinish:
        """The run could not begin (the session is another process's now): the front end still gets
        an error and a run_finish, and nothing is written to a session this process does not hold."""
        info = events.ErrorInfo(kind=error.kind.value, message=error.message)
        self.emit(events.ErrorEvent(**self._base(), error=info))
        # Whatever the other process's record says, this run checked nothing.
        result = self._result(StopReason.ERROR, info).model_copy(update={
            "verification": events.VerificationStatus.NOT_RUN, "verification_part_id": None,
            "verification_citation": None, "invalidated_by": None,
            "verification_reason": "this run did not begin: the session is another process's"})
        self.stop_reason = StopReason.ERROR
        self.emit(result)
        return result

    def _finish(self, reason: StopReason, error: events.ErrorInfo | None = None) -> events.RunFinish:
        self.stop_reason = reason
        result = self._result(reason, error)
        if self.trace is not None:
            self.trace.write({"runFinish": result.wire()})
        # Stored before it is shown: how the run ended survives a reader that went away (a closed pipe).
        # A store that cannot take it must not cost the reader the end of the run.
        try:
            self.env.store.record_event(self.session.id, "run.finish", result.wire())
        except StoreUnavailable as exc:
            if error is None:
                self.session.store_faulted = True
                error = events.ErrorInfo(kind=exc.kind.value, message=exc.message)
                self.emit(events.ErrorEvent(**self._base(), error=error))
                result = result.model_copy(update={"stop_reason": StopReason.ERROR, "error": error})
                self.stop_reason = StopReason.ERROR
        try:
            self._close()
        finally:
            self.emit(result)
        self._announce_rejections()
        return result

    def _result(self, reason: StopReason, error: events.ErrorInfo | None) -> events.RunFinish:
        check = verification.derive(self.session.history)
        citation = (events.Citation(session_id=self.session.id, message_id=check.message_id, part_id=check.part_id)
                    if check.part_id and check.message_id else None)
        result = events.RunFinish(
            **self._base(), stop_reason=reason, verification=check.status,
            verification_part_id=check.part_id, verification_citation=citation,
            verification_reason=check.invalidated_by.reason() if check.invalidated_by else None,
            invalidated_by=events.InvalidatedBy(
                paths=list(check.invalidated_by.paths), by=check.invalidated_by.by,
                step=check.invalidated_by.step, tool=check.invalidated_by.tool) if check.invalidated_by else None,
            steps=self.steps, tool_calls=self.tool_calls, tool_errors=self.tool_errors,
            tokens=_tokens(self.usage, self.usage_unknown), files_changed=sorted(self.files_changed),
            model=self.env.provider.label if self.env.provider.scripted else self.env.settings.model,
            scripted=self.env.provider.scripted, error=error, handoff_to=self.handoff_to,
            previous_session_ids=self.previous_session_ids or None)
        return result
