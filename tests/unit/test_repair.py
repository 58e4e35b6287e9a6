"""Repair on load: tool calls a dead process left unanswered are answered once, as
interrupted by a restart, so a provider that rejects unanswered calls (like OpenAI's) accepts the history."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lsp_agent.core.loop import Generation
from lsp_agent.core.repair import INTERRUPTED, MAY_HAVE_EFFECTS, unanswered_calls
from lsp_agent.core.session import AgentSession, Environment
from lsp_agent.domain.events import StopReason
from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart
from lsp_agent.providers.scripted import Script, ScriptedProvider, unanswered_call
from tests.helpers import make_env, reply


def strict_env(root: Path) -> Environment:
    env = make_env(root, [])
    script = Script(label="strict", replies=[reply(text="carried on")], repeat_last=True, reject_unanswered_calls=True)
    return replace(env, provider=ScriptedProvider(script))


def crashed_session(env: Environment) -> str:
    """What a server killed mid-tool leaves: the prompt and the assistant's calls, no results."""
    session = AgentSession(env, title="t")
    session.append(Message(role=Role.USER, parts=[TextPart(text="do it")], generation="gen_1"))
    session.append(Message(role=Role.ASSISTANT, generation="gen_1", step=1, parts=[
        ToolCallPart(call_id="call_0_0", name="read_file", arguments='{"path":"a.txt"}'),
        ToolCallPart(call_id="call_0_1", name="run_command", arguments='{"command":"python slow.py"}'),
        ToolCallPart(call_id="call_0_2", name="no_such_tool", arguments="{}")]))
    return session.id


async def test_a_loaded_session_answers_each_unanswered_call_once_and_continues(tmp_path: Path) -> None:
    env = strict_env(tmp_path)
    sid = crashed_session(env)
    assert unanswered_call(env.store.messages(sid)) == "call_0_0"

    loaded = AgentSession(env, sid)
    last = loaded.history[-1]
    assert last.role is Role.TOOL and (last.generation, last.step) == ("gen_1", 1)
    results = {r.call_id: r for r in last.tool_results()}
    assert list(results) == ["call_0_0", "call_0_1", "call_0_2"]
    assert all(not r.ok and r.metadata[INTERRUPTED] for r in results.values())
    # read-only → no effects; commands may have had effects; an unknown tool never ran
    assert [r.metadata[MAY_HAVE_EFFECTS] for r in results.values()] == [False, True, False]
    assert "had no effects" in results["call_0_0"].output
    assert "may have had effects" in results["call_0_1"].output
    stored = env.store.messages(sid)
    assert stored == loaded.history and unanswered_calls(stored) == []

    # Idempotent: loading again writes nothing.
    again = AgentSession(env, sid)
    assert again.repair() == 0 and env.store.messages(sid) == stored

    finish = await Generation(again).run("carry on")
    assert finish.stop_reason is StopReason.FINAL


async def test_without_repair_the_strict_provider_rejects_the_history(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard the test above relies on: the strict double really answers 400 for unanswered calls."""
    env = strict_env(tmp_path)
    sid = crashed_session(env)
    monkeypatch.setattr(AgentSession, "repair", lambda self: 0)
    finish = await Generation(AgentSession(env, sid)).run("carry on")
    assert finish.stop_reason is StopReason.ERROR


def test_a_whole_history_needs_no_repair(tmp_path: Path) -> None:
    env = strict_env(tmp_path)
    session = AgentSession(env)
    session.append(Message(role=Role.USER, parts=[TextPart(text="hi")]))
    session.append(Message(role=Role.ASSISTANT, parts=[TextPart(text="hello")]))
    assert AgentSession(env, session.id).repair() == 0
    assert len(env.store.messages(session.id)) == 2
