"""Handoff: a fresh session seeded with a checked note of the six items, linked to the old one —
on demand, and automatically when the same check failed the same way three times."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_agent.context.handoff import CONTINUE_PROMPT, same_failure_streak
from lsp_agent.context.view import HANDOFF
from lsp_agent.core.agent import Agent
from lsp_agent.core.errors import AgentError
from lsp_agent.domain.history import TextPart
from lsp_agent.protocol.errors import status_of
from lsp_agent.providers.scripted import ScriptedReply
from tests.helpers import RecordingSink, call, reply, wait_for
from tests.unit.test_context_support import HANDOFF as MARKER
from tests.unit.test_context_support import context_env, failing_repo, visible_text

TASK = "Make the type check pass by fixing model.py; do not modify view.py."


async def test_handoff_starts_a_linked_session_seeded_with_the_checked_note(tmp_path: Path) -> None:
    failing_repo(tmp_path)
    replies = [reply(call("read_file", path="model.py")),
               reply(call("apply_patch", path="model.py", old_text="X = 9", new_text="X = 2")),
               reply(call("verify_project")), reply(text="stuck"),
               ScriptedReply(when=MARKER, text="Handoff: the check fails on model.py:1. Next: set X = 2."),
               reply(call("apply_patch", path="model.py", old_text="X = 1", new_text="X = 2")),
               reply(call("read_file", path="model.py")), reply(text="continuing")]
    env, provider = context_env(tmp_path, replies)
    agent = Agent(env)
    first = agent.start(TASK)
    await agent.wait(first.generation)

    started = await agent.context_requests.handoff(first.session_id)
    result = await agent.wait(started.generation)
    assert result is not None and result.stop_reason.value == "final"

    assert started.session_id != first.session_id
    row = env.store.session(started.session_id)
    assert row is not None and row.parent_id == first.session_id and row.title.startswith("handoff: ")
    fresh = agent.session(started.session_id)
    note, prompt = fresh.history[0], fresh.history[1]
    assert prompt.text() == CONTINUE_PROMPT
    part = note.parts[0]
    assert isinstance(part, TextPart) and part.synthetic
    info = part.metadata[HANDOFF]
    assert info["from"] == first.session_id and info["reason"] == "requested by the user"
    text = note.text()
    assert f"continues session {first.session_id}" in text
    assert "Handoff: the check fails on model.py:1." in text
    old = agent.session(first.session_id).history
    task = f"[{old[0].id}/{old[0].parts[0].id}]"
    assert f"- {task} task: {TASK}" in text  # repaired: the model's note did not cite it
    assert "failed attempt: apply_patch" in text and "failed check: ERROR: verify failed" in text
    # The new session starts from the note alone, and must read files before editing them.
    first_request = next(r for r in provider.requests if r.messages and r.messages[0].id == note.id)
    assert [m.id for m in first_request.messages] == [note.id, prompt.id]
    assert TASK in visible_text(first_request)
    patch = next(p for m in fresh.history for p in m.tool_results() if p.name == "apply_patch")
    assert not patch.ok and "model.py must be read again" in patch.output
    assert env.store.events(first.session_id, "context.handoff")[0]["to"] == started.session_id


async def test_handoff_of_a_busy_session_is_refused(tmp_path: Path) -> None:
    env, _ = context_env(tmp_path, [reply(text="slow", delay_ms=300)])
    agent = Agent(env)
    started = agent.start("task")
    with pytest.raises(AgentError) as refused:
        await agent.context_requests.handoff(started.session_id)
    assert (status_of(refused.value), refused.value.kind) == (409, "busy")
    await agent.wait(started.generation)


async def test_the_same_check_failing_the_same_way_three_times_hands_off_by_itself(tmp_path: Path) -> None:
    failing_repo(tmp_path)
    sink = RecordingSink()
    attempts = [reply(call("verify_project")),
                reply(call("apply_patch", path="model.py", old_text="X = 1", new_text="X = 7")),
                reply(call("verify_project")),
                reply(call("apply_patch", path="model.py", old_text="X = 7", new_text="X = 8")),
                reply(call("verify_project"))]
    replies = [*attempts, reply(text="never reached in the old session"),
               ScriptedReply(when=MARKER, text="Three identical failures of model.py:1; try another approach.")]
    env, _ = context_env(tmp_path, replies, sink)
    agent = Agent(env)
    first = agent.start(TASK)
    result = await agent.wait(first.generation)
    assert result is not None and result.stop_reason.value == "handoff"  # its own reason, not the loop guard's
    assert same_failure_streak(agent.session(first.session_id).history) == 3
    handoff = next(n for n in sink.of("notice") if n.kind == "handoff")
    assert handoff.data is not None and handoff.data["from"] == first.session_id
    new_id = handoff.data["to"]
    assert result.handoff_to == new_id
    await wait_for(lambda: new_id in agent.sessions and agent.sessions[new_id].history[-1].role.value == "assistant")
    fresh = agent.sessions[new_id]
    assert env.store.session(new_id).parent_id == first.session_id  # type: ignore[union-attr]
    note = fresh.history[0].text()
    assert "the same check failed the same way 3 times" in note
    assert "(the same failure 3 times)" in note and "model.py" in note
    # The scripted model continues where the old session's turns ended (the note stands for them).
    assert fresh.history[-1].text() == "never reached in the old session"
