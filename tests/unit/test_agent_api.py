"""What front ends ask the Agent for instead of reaching into its store, and a per-run model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_agent.core.agent import ModelChoice
from lsp_agent.core.errors import AgentError, AgentErrorKind
from lsp_agent.core.rejected_calls import OMITTED
from lsp_agent.core.session import ModelFacts
from lsp_agent.domain.history import ErrorKind, Message, Role, TextPart, ToolCallPart, ToolResultPart
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


def test_pages_of_a_session_stored_with_an_oversized_refused_call_show_it_bounded(tmp_path: Path) -> None:
    # Rows as an older version left them: the refused call's whole arguments stored. The pages a
    # client reads must show what a run sends (the arguments omitted), not the rows' megabytes.
    agent = make_agent(tmp_path, [])
    store = agent.env.store
    store.create_session("ses_old", str(tmp_path), "scripted/test", "old")
    huge = json.dumps({"path": "big.txt", "content": "x" * 300_000})
    store.append_message("ses_old", Message(role=Role.USER, parts=[TextPart(text="write it")]))
    store.append_message("ses_old", Message(role=Role.ASSISTANT, parts=[
        ToolCallPart(call_id="call_big", name="write_file", arguments=huge)]))
    store.append_message("ses_old", Message(role=Role.TOOL, parts=[ToolResultPart(
        call_id="call_big", name="write_file", ok=False, error_kind=ErrorKind.PARAMETER_MISMATCH,
        output="ERROR: too big")]))

    first = agent.session_page("ses_old", limit=2)
    rest = agent.session_page("ses_old", after=first.next, limit=10)

    [call] = [p for m in first.messages + rest.messages for p in m.parts if isinstance(p, ToolCallPart)]
    assert len(call.arguments) < 4_000 and json.loads(call.arguments)[OMITTED]["chars"] == len(huge)
