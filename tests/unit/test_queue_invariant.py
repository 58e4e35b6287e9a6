"""Random interleavings of add / steer / sendNow / cancel / generation end / crash+restart.

Invariant: every submitted text ends exactly once in the history or remains visible in the
queue (waiting, cancelled by the user, or failed with its reason) — never lost, never duplicated. A
row with attachments is sent whole (its attachments in the same prompt) or, when one cannot be sent,
settles `failed` and never reaches the history. The machine keeps its own
list of every text it queued and every row it cancelled, so a row that vanishes, or turns up cancelled
without anyone cancelling it, is caught as well as a text sent twice.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from lsp_agent.app.runtime import open_environment
from lsp_agent.core.agent import MAX_PROMPT_CHARS, Agent
from lsp_agent.core.attachments import prompt_with_attachments
from lsp_agent.core.errors import AgentError
from lsp_agent.protocol.errors import status_of
from lsp_agent.providers.scripted import Script, ScriptedProvider
from lsp_agent.settings.config import load_settings
from tests.helpers import RecordingSink, reply


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="queue-machine-"))
        self.state = self.root.parent / (self.root.name + "-state")
        self.abandoned: list[Any] = []  # crashed loops and agents, kept alive so nothing cleans up
        self.counter = 0
        self.prompts: list[str] = []
        #: every text queue_add acknowledged, and those the user (this machine) cancelled
        self.queued: list[str] = []
        self.cancelled: set[str] = set()
        self.cancelled_ids: set[str] = set()
        #: rows queued with an attachment: (marker in it, whether it can be sent)
        self.attached: list[tuple[str, bool]] = []
        self.session_id: str | None = None
        self._boot()

    def _boot(self) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        script = Script(replies=[reply(text="ok", delay_ms=15)], repeat_last=True)
        env = open_environment(self.root, load_settings(self.root, {}), ScriptedProvider(script), RecordingSink(),
                               state=self.state)
        self.agent = Agent(env)
        if self.session_id is not None:
            self.agent.session(self.session_id)

    def _text(self) -> str:
        self.counter += 1
        return f"text-{self.counter}"

    def _run(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)

    def _sid(self) -> str:
        if self.session_id is None:
            text = self._text()
            self.session_id = self.agent.start(text).session_id
            self.prompts.append(text)
        return self.session_id

    def _waiting(self) -> list[Any]:
        return self.agent.queue.items(self._sid(), include_settled=False)

    @rule()
    def start_or_queue(self) -> None:
        sid = self._sid()
        text = self._text()
        self.agent.follow_ups.add(sid, text)
        self.queued.append(text)

    @rule(kind=st.sampled_from(["text", "file", "image"]), with_text=st.booleans())
    def queue_with_attachment(self, kind: str, with_text: bool) -> None:
        sid = self._sid()
        marker = f"<{self._text()}>"  # bracketed: text-1 would also be found in text-10
        attachment = {"text": {"type": "text", "name": "note", "text": marker},
                      "file": {"type": "file", "path": f"{marker}.txt"},
                      "image": {"type": "image", "data": marker}}[kind]
        self.agent.follow_ups.add(sid, f"see {marker}" if with_text else "", attachments=[attachment])
        self.attached.append((marker, kind != "image"))

    @rule(index=st.integers(0, 5))
    def steer_row(self, index: int) -> None:
        rows = self._waiting()
        if rows:
            try:
                self._run(self.agent.follow_ups.steer(rows[index % len(rows)].id))
            except AgentError as exc:
                assert status_of(exc) in (400, 409)

    @rule(index=st.integers(0, 5), then=st.sampled_from(["finish", "interrupt", "crash"]))
    def steer_then(self, index: int, then: str) -> None:
        # A steered row, then the generation either reaches its step boundary (the correction applies)
        # or never does (interrupted, or the process dies: the row goes back to the queue). Rare as
        # separate rules, since generations end quickly here, so also one.
        self.steer_row(index)
        if then == "crash" and self.session_id is not None:
            self.crash_and_restart()
        elif then == "interrupt":
            self.interrupt_and_wait()
        else:
            live = [t for t in self.agent.tasks.values() if not t.done()]
            if live:
                self._run(asyncio.wait_for(asyncio.gather(*map(asyncio.shield, live)), 30))

    @rule()
    def queue_behind_then_interrupt(self) -> None:
        # Rows typed while a generation runs, then the user stops it: the rows must wait (paused), not
        # vanish. (Generations end quickly here, so this is rare when left to chance.)
        self.start_or_queue()
        self.start_or_queue()
        self.interrupt_and_wait()

    @rule()
    def interrupt_and_wait(self) -> None:
        # `interrupt` gives the loop a moment only; this one lets the generation wind down fully, so
        # what happens at its end (waiting rows paused, pending corrections rejected) runs every time.
        generation = self.agent.cancel(self._sid())
        task = self.agent.tasks.get(generation) if generation is not None else None
        if task is not None:
            self._run(asyncio.wait_for(asyncio.shield(task), 30))

    @rule(index=st.integers(0, 5))
    def send_now(self, index: int) -> None:
        rows = self._waiting()
        if rows:
            try:
                self.agent.follow_ups.send_now(rows[index % len(rows)].id)
            except AgentError as exc:
                assert status_of(exc) == 409

    @rule(index=st.integers(0, 5))
    def cancel_row(self, index: int) -> None:
        rows = self._waiting()
        if rows:
            try:
                cancelled = self.agent.follow_ups.cancel(rows[index % len(rows)].id)
            except AgentError as exc:
                assert status_of(exc) == 409
            else:
                self.cancelled.add(cancelled.text)
                self.cancelled_ids.add(cancelled.id)

    @rule()
    def steer_prefix(self) -> None:
        try:
            self._run(self.agent.follow_ups.steer_prefix(self._sid()))
        except AgentError as exc:
            assert status_of(exc) in (400, 409)

    @rule()
    def interrupt(self) -> None:
        self.agent.cancel(self._sid())
        self._run(asyncio.sleep(0.005))

    @rule(ms=st.integers(1, 40))
    def advance(self, ms: int) -> None:
        self._run(asyncio.sleep(ms / 1000))

    @precondition(lambda self: self.session_id is not None)
    @rule()
    def crash_and_restart(self) -> None:
        # The process dies: no finally blocks, receipts gone. Steered rows and the corrections written
        # ahead for them are orphans alike (one process owns both; a real crash leaves its pid dead).
        self.abandoned.append((self.loop, self.agent, []))
        self.agent.env.store.db.execute(
            "UPDATE queue SET steer_owner='pid:999999999' WHERE steer_owner IS NOT NULL")
        self.agent.env.store.db.execute("UPDATE corrections SET owner='pid:999999999'")
        self._boot()

    @invariant()
    def nothing_lost_nothing_duplicated(self) -> None:
        if self.session_id is None:
            return
        history = self.agent.env.store.messages(self.session_id)
        texts = [p.text for m in history if m.role.value == "user" for p in m.parts if hasattr(p, "text")]
        for prompt in self.prompts:
            assert texts.count(prompt) == 1
        pending_clients = {c.client_id for s in self.agent.steering._sessions.values() for c in s.pending}
        for item in self.agent.queue.items(self.session_id):
            if item.attachments:
                continue  # checked whole by attachments_sent_whole_or_failed
            assert item.status.value != "failed", item  # only an attachment makes a row unsendable
            seen = texts.count(item.text)
            status = item.status.value
            if status in ("queued", "paused"):
                assert seen == 0, item
            elif status == "sent" or item.steered_applied_at is not None:
                assert seen == 1, item
            elif item.steered_into is not None:  # in flight: its correction must still be pending here
                assert seen == 0 and f"queue_{item.id}" in pending_clients, item
            else:  # cancelled by the user
                assert seen == 0, item

    @invariant()
    def attachments_sent_whole_or_failed(self) -> None:
        if self.session_id is None:
            return
        history = self.agent.env.store.messages(self.session_id)
        items = self.agent.queue.items(self.session_id)
        for marker, deliverable in self.attached:
            rows = [i for i in items if marker in json.dumps(i.attachments)]
            assert len(rows) == 1, (marker, rows)
            item = rows[0]
            holding = [m for m in history if m.role.value == "user" and marker in m.text()]
            status = item.status.value
            if status == "sent":
                assert deliverable, item
                assert [m.id for m in holding] == [item.message_id], (item, holding)
                assert holding[0].text() == prompt_with_attachments(item.text, item.attachments, MAX_PROMPT_CHARS)
            elif status == "failed":
                assert not deliverable and holding == [] and item.error and "image" in item.error, item
            else:
                assert holding == [], (item, holding)
                assert status in ("queued", "paused") or item.id in self.cancelled_ids, item

    @invariant()
    def every_queued_text_has_one_row_and_one_end(self) -> None:
        if self.session_id is None:
            return
        for text in self.queued:
            self._one_end(text, settled=False)

    def _one_end(self, text: str, settled: bool) -> None:
        """`text`, queued once, has exactly one row and is in exactly one of the queue's end states:
        sent (its prompt message holds it, once), steered and applied (its correction message, once),
        waiting, cancelled by the user, or - while a generation runs - steered and not applied yet."""
        assert self.session_id is not None
        rows = [i for i in self.agent.queue.items(self.session_id) if i.text == text]
        assert len(rows) == 1, (text, rows)  # none: the row was dropped; two: it was copied
        item = rows[0]
        history = self.agent.env.store.messages(self.session_id)
        holding = [m for m in history if m.role.value == "user" and any(getattr(p, "text", None) == text
                                                                         for p in m.parts)]
        status = item.status.value
        if status == "sent":
            assert [m.id for m in holding] == [item.message_id], (item, holding)
        elif item.steered_applied_at is not None:
            assert status == "cancelled" and [m.id for m in holding] == [item.message_id], (item, holding)
        else:
            assert holding == [], (item, holding)  # not started: nothing of it in the history
            if status == "cancelled" and item.steered_into is None:
                assert text in self.cancelled, ("cancelled, but not by the user", item)
            elif status == "cancelled":
                assert not settled, ("steered into a generation that is over, and never applied", item)
            else:
                assert status in ("queued", "paused"), item

    def _settle(self) -> None:
        """Let every generation run to its end. Each scripted reply is quick and each waiting row can
        start one generation at most, so more generations than rows means rows start over and over."""
        deadline = self.loop.time() + 30
        seen: set[str] = set()
        while live := [g for g, t in self.agent.tasks.items() if not t.done()]:
            seen.update(live)
            rows = len(self.queued) + len(self.attached)
            assert len(seen) <= rows + 1, "generations keep starting: a row is sent again and again"
            assert self.loop.time() < deadline, "the generations did not end"
            self._run(asyncio.sleep(0.01))

    def teardown(self) -> None:
        try:
            # After a failed step there is nothing to settle: the failure is the report.
            if self.session_id is not None and sys.exc_info()[1] is None:
                # Once nothing runs, no text may be left halfway: every one has ended exactly once.
                self._settle()
                for text in self.queued:
                    self._one_end(text, settled=True)
                self.attachments_sent_whole_or_failed()
        finally:
            self._clean_up()

    def _clean_up(self) -> None:
        self.abandoned.append((self.loop, self.agent, []))
        for loop, agent, _ in self.abandoned:  # wind every loop down in its own context
            asyncio.set_event_loop(loop)
            while live := [t for t in agent.tasks.values() if not t.done()]:
                for task in live:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*live, return_exceptions=True))
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()
        asyncio.set_event_loop(None)
        self.abandoned.clear()
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.state, ignore_errors=True)


QueueMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=30, deadline=None)
TestQueueInvariant = QueueMachine.TestCase
