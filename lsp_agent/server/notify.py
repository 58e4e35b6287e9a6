"""Core events → `agent/event` notifications and `$/progress` (the EventSink of an editor session);
steering receipts → `agent/receipt` and queue changes → `agent/queueChanged`.

`emit` is called by the loop and must never block it: notifications are written at once
(pygls' notify does not wait for the client), in the order the loop emitted them. Text and
reasoning deltas arrive already coalesced by the core (`core/deltas.py`), so nothing is
buffered again here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from lsp_agent.core.queue import MAX_STEER_CHARS
from lsp_agent.domain import events
from lsp_agent.protocol.methods import AGENT_EVENT, AGENT_QUEUE_CHANGED, AGENT_RECEIPT
from lsp_agent.protocol.steering import QueueChangedParams, QueueItemOut, ReceiptOut, ReceiptParams

log = logging.getLogger(__name__)

PROGRESS_TITLE = "lsp-agent"
#: clientID prefix of the corrections the core makes from queue rows (Agent.queue_steer)

#: verify_project results: (envelope, sessionID, partID)
VerifyObserver = Callable[[dict[str, Any], str, str], None]


@dataclass
class _Progress:
    """One generation's progress bar. Values wait until the token exists on the client."""

    token: int | str
    session_id: str
    max_steps: int = 0
    step: int = 0
    ready: bool = False
    dead: bool = False
    queued: list[types.WorkDoneProgressBegin | types.WorkDoneProgressReport | types.WorkDoneProgressEnd] = field(
        default_factory=list)


class LspEventSink:
    def __init__(self, ls: LanguageServer, on_verify: VerifyObserver | None = None,
                 server_progress: bool = False, steer_chars: Callable[[], int] = lambda: MAX_STEER_CHARS) -> None:
        self.ls = ls
        #: `limits.steer_chars`, which the rows' `steerable` is judged by (asked at each notification)
        self.steer_chars = steer_chars
        self.on_verify = on_verify
        self.server_progress = server_progress  # the client accepts window/workDoneProgress/create
        self._client_tokens: dict[str, int | str] = {}  # generation → token supplied with agent/run
        self._progress: dict[str, _Progress] = {}
        self._token_sessions: dict[int | str, str] = {}
        self._background: set[asyncio.Future[None]] = set()

    # --- EventSink ------------------------------------------------------------------------------

    def emit(self, event: events.SinkEvent) -> None:
        try:
            self._send(event)
            self._observe(event)
        except Exception:  # the loop must never fail because the editor connection did
            log.exception("could not forward %s", getattr(event, "type", event))

    def use_token(self, generation: str, token: int | str) -> None:
        self._client_tokens[generation] = token

    def session_of_token(self, token: int | str) -> str | None:
        return self._token_sessions.get(token)

    def _send(self, event: events.SinkEvent) -> None:
        if isinstance(event, events.ReceiptEvent):
            receipt = ReceiptOut.model_validate(event.receipt)
            self.ls.protocol.notify(AGENT_RECEIPT, ReceiptParams(session_id=event.session_id, receipt=receipt).wire())
        elif isinstance(event, events.QueueChangedEvent):
            steer_chars = self.steer_chars()
            items = [QueueItemOut.of(i, steer_chars) for i in event.items]
            self.ls.protocol.notify(AGENT_QUEUE_CHANGED,
                                    QueueChangedParams(session_id=event.session_id, items=items).wire())
        else:
            self.ls.protocol.notify(AGENT_EVENT, {"sessionID": event.session_id, "generation": event.generation,
                                                  "event": event.wire()})

    # --- side effects of events -----------------------------------------------------------------

    def _observe(self, event: events.SinkEvent) -> None:
        if isinstance(event, events.ToolUse) and event.part.tool == "verify_project" and self.on_verify:
            envelope = (event.part.state.metadata or {}).get("envelope")
            if isinstance(envelope, dict):
                self.on_verify(envelope, event.session_id, event.part.id)
        if isinstance(event, events.StepStart):
            self._step(event)
        elif isinstance(event, events.ToolStart):
            state = self._progress.get(event.generation)
            if state is not None:
                self._report(state, f"step {state.step} of {state.max_steps} · {event.part.tool}")
        elif isinstance(event, events.RunFinish):
            self._client_tokens.pop(event.generation, None)
            state = self._progress.pop(event.generation, None)
            if state is not None:
                message = f"{event.stop_reason.value} · verification {event.verification.value}"
                self._queue(state, types.WorkDoneProgressEnd(message=message))

    def _step(self, event: events.StepStart) -> None:
        state = self._progress.get(event.generation)
        if state is None:
            if event.step != 1:
                return
            state = self._begin(event)
            if state is None:
                return
        state.step, state.max_steps = event.step, event.max_steps
        if event.step > 1:
            self._report(state, f"step {event.step} of {event.max_steps}")

    def _begin(self, event: events.StepStart) -> _Progress | None:
        token = self._client_tokens.get(event.generation)
        if token is None and not self.server_progress:
            return None
        state = _Progress(token=token if token is not None else f"lsp-agent/{event.generation}",
                          session_id=event.session_id, max_steps=event.max_steps, step=1)
        self._progress[event.generation] = state
        self._token_sessions[state.token] = event.session_id
        self._queue(state, types.WorkDoneProgressBegin(
            title=PROGRESS_TITLE, message=f"step 1 of {event.max_steps}", percentage=0, cancellable=True))
        if token is not None:
            state.ready = True
            self._drain(state)
        else:
            task = asyncio.ensure_future(self._create(state))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        return state

    async def _create(self, state: _Progress) -> None:
        try:
            await self.ls.work_done_progress.create_async(state.token)
        except Exception as exc:  # a client may refuse; the run goes on without a progress bar
            log.info("work done progress token refused: %s", exc)
            state.dead = True
            return
        state.ready = True
        self._drain(state)

    def _report(self, state: _Progress, message: str) -> None:
        percentage = min(99, int(100 * (state.step - 1) / max(state.max_steps, 1)))
        self._queue(state, types.WorkDoneProgressReport(message=message, percentage=percentage, cancellable=True))

    def _queue(self, state: _Progress, value: Any) -> None:
        if state.dead:
            return
        state.queued.append(value)
        if state.ready:
            self._drain(state)

    def _drain(self, state: _Progress) -> None:
        queued, state.queued = state.queued, []
        for value in queued:
            self.ls.protocol.notify(types.PROGRESS, types.ProgressParams(token=state.token, value=value))
            if isinstance(value, types.WorkDoneProgressEnd):
                self._token_sessions.pop(state.token, None)
