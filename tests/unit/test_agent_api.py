"""What front ends ask the Agent for instead of reaching into its store, and a per-run model."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_agent.core.agent import ModelChoice
from lsp_agent.core.errors import AgentError, AgentErrorKind
from lsp_agent.core.session import ModelFacts
from lsp_agent.providers.scripted import Script, ScriptedProvider
from tests.helpers import make_agent, reply


async def test_sessions_are_listed_and_paged_from_the_store(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="one"), reply(text="two")])
    first = agent.start("first task")
    await agent.wait(first.generation)
    await agent.wait(agent.start("second task", first.session_id).generation)
    assert agent.knows_session(first.session_id) and not agent.knows_session("ses_nope")
    [summary] = agent.list_sessions()
    assert (summary.record.id, summary.record.title, summary.state) == (first.session_id, "first task", "idle")
    page = agent.session_page(first.session_id, limit=2)
    assert [m.text() for m in page.messages] == ["first task", "one"] and page.next == page.messages[-1].id
    rest = agent.session_page(first.session_id, after=page.next, limit=10)
    assert [m.text() for m in rest.messages] == ["second task", "two"] and rest.next is None
    with pytest.raises(AgentError) as unknown:
        agent.session_page("ses_nope")
    assert unknown.value.kind is AgentErrorKind.UNKNOWN_SESSION
    with pytest.raises(AgentError) as missing:
        agent.session_page(first.session_id, after="msg_nope")
    assert missing.value.kind is AgentErrorKind.UNKNOWN_MESSAGE


async def test_a_per_run_model_leaves_the_agent_unchanged(tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [reply(text="from the default model")])
    base = agent.env
    other = ScriptedProvider(Script(label="other", replies=[reply(text="from the other model")]),
                             record_requests=True)
    settings = base.settings.model_copy(update={"model": "scripted/other"})
    started = agent.start("task", model=ModelChoice(settings, other, ModelFacts(name="scripted/other")))
    result = await agent.wait(started.generation)
    assert result is not None and result.model == "scripted (other)"
    assert agent.env is base and agent.env.settings.model != "scripted/other"
    assert [r.model for r in other.requests] == ["scripted/other"]
    again = agent.start("next", started.session_id)  # back to the Agent's own model
    result = await agent.wait(again.generation)
    assert result is not None and result.model == "scripted (test)"
