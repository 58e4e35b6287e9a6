"""Random interleavings of add / steer / sendNow / cancel / generation end / crash+restart.

Invariant: every submitted text ends exactly once in the history or remains visible in the
queue (waiting, or cancelled by the user) — never lost, never duplicated.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from lsp_agent.app.runtime import open_environment
from lsp_agent.core.agent import Agent
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
        self.agent.queue_add(sid, self._text())

    @rule(index=st.integers(0, 5))
    def steer_row(self, index: int) -> None:
        rows = self._waiting()
        if rows:
            try:
                self._run(self.agent.queue_steer(rows[index % len(rows)].id))
            except AgentError as exc:
                assert status_of(exc) in (400, 409)

    @rule(index=st.integers(0, 5))
    def send_now(self, index: int) -> None:
        rows = self._waiting()
        if rows:
            try:
                self.agent.queue_send_now(rows[index % len(rows)].id)
            except AgentError as exc:
                assert status_of(exc) == 409

    @rule(index=st.integers(0, 5))
    def cancel_row(self, index: int) -> None:
        rows = self._waiting()
        if rows:
            try:
                self.agent.queue_cancel(rows[index % len(rows)].id)
            except AgentError as exc:
                assert status_of(exc) == 409

    @rule()
    def steer_prefix(self) -> None:
        try:
            self._run(self.agent.steer_prefix(self._sid()))
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

    def teardown(self) -> None:
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
