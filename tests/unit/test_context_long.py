"""A 200-step scripted session with large tool outputs, through folds and two compactions.

It stays under its token budget; its request bytes grow far slower than without context
management; and the task, a constraint given once at step 2, a failed attempt and the failing
check's source version all survive both compactions — in the text the model actually receives.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.core.agent import Agent
from lsp_agent.providers.scripted import ScriptedReply
from tests.helpers import RecordingSink, call, reply, wait_for
from tests.unit.test_context_support import COMPACTION, RecordingProvider, context_env, failing_repo, visible_text

STEPS = 200
TASK = "Make the type check pass by fixing model.py."
CONSTRAINT = "do not modify view.py"
WINDOW = 20_000


def script() -> list[ScriptedReply]:
    replies = [
        reply(call("read_file", path="view.py"), delay_ms=150),  # the constraint is steered in meanwhile
        reply(call("apply_patch", path="model.py", old_text="X = 5", new_text="X = 2")),  # fails: no match
        reply(call("verify_project")),  # fails: model.py:1
    ]
    replies += [reply(call("read_file", path=f"data/f{i % 10}.txt", start_line=1 + (i // 10) % 15))
                for i in range(STEPS - len(replies))]
    replies.append(reply(text="Stopping here."))
    # The model's summary keeps the gist but cites none of the required items: the check repairs it.
    replies.append(ScriptedReply(when=COMPACTION, text="1. Task: fix the type check. 6. Next: keep reading data."))
    return replies


@dataclass
class Run:
    agent: Agent
    provider: RecordingProvider
    session_id: str

    def requests(self) -> list[dict[str, Any]]:
        return self.agent.env.store.events(self.session_id, "llm.request")


async def run(root: Path, window: int) -> Run:
    sink = RecordingSink()
    env, provider = context_env(root, script(), sink, compaction={"context_window": window}, maxSteps=STEPS + 5)
    agent = Agent(env)
    started = agent.start(TASK)
    await wait_for(lambda: provider.requests != [])
    receipt = await agent.corrections.steer(started.session_id, started.generation, "c1", CONSTRAINT)
    assert receipt.status.value == "accepted"
    result = await agent.wait(started.generation)
    assert result is not None and result.stop_reason.value == "final", result
    assert result.steps == STEPS + 1
    return Run(agent, provider, started.session_id)


@pytest.fixture(scope="module")
def managed(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One managed run shared by the tests of this module (it takes a couple of seconds)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LSP_AGENT_STATE_DIR", str(tmp_path_factory.mktemp("state")))
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
        return asyncio.run(run(failing_repo(tmp_path_factory.mktemp("managed")), WINDOW))


def test_two_hundred_steps_stay_in_budget_and_keep_what_matters(managed: Run) -> None:
    agent, provider, sid = managed.agent, managed.provider, managed.session_id
    store = agent.env.store
    compactions = [e for e in store.events(sid, "context.compaction") if e["applied"]]
    folds = store.events(sid, "context.fold")
    assert len(compactions) >= 2 and folds
    budget = compactions[0]["budget"]["budget"]
    assert budget == WINDOW - 4096

    # Every request, the harness's own summary requests included, fit the budget.
    assert max(r["tokens"] for r in managed.requests()) <= budget
    steps = provider.step_requests()
    assert len(steps) == STEPS + 1

    # The final request: after two compactions, the model still reads the task, the constraint,
    # the failed attempt and the version of the sources the failing check ran against.
    session = agent.session(sid)
    text = visible_text(steps[-1])
    assert TASK in text and CONSTRAINT in text
    attempt = next(p for m in session.history for p in m.tool_results() if p.name == "apply_patch")
    check = next(p for m in session.history for p in m.tool_results() if p.name == "verify_project")
    attempt_message = next(m for m in session.history if attempt in m.parts)
    assert f"[{attempt_message.id}/{attempt.id}]" in text and '"old_text":"X = 5"' in text
    fingerprint = check.metadata["envelope"]["fingerprint"][:16]
    assert f"sources fingerprint {fingerprint}" in text and "model.py" in text
    # ... and the originals are still stored, in full.
    assert any(m.text() == CONSTRAINT for m in store.messages(sid))
    assert len(store.messages(sid)) == len(session.history)


async def test_request_bytes_grow_far_slower_than_without_context_management(managed: Run, tmp_path: Path) -> None:
    baseline = await run(failing_repo(tmp_path / "baseline"), 10_000_000)  # nothing ever needs folding
    managed_bytes = [r["bytes"] for r in managed.requests() if "purpose" not in r]
    baseline_bytes = [r["bytes"] for r in baseline.requests()]
    assert not baseline.agent.env.store.events(baseline.session_id, "context.fold")
    # Without management the total grows quadratically with the steps; with it, linearly: per-request
    # size is bounded, so the second half of the run costs about what the first half did.
    assert sum(managed_bytes) * 2.5 < sum(baseline_bytes)
    half = len(managed_bytes) // 2
    assert sum(managed_bytes[half:]) < 1.5 * sum(managed_bytes[:half])
    assert sum(baseline_bytes[half:]) > 2 * sum(baseline_bytes[:half])
    # Folding in batches keeps the cached prefix most of the time.
    shares = [r["prefixShare"] for r in managed.requests()]
    assert sum(shares) / len(shares) > 0.9
