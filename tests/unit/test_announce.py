"""Append-only requests (so the provider's prompt cache survives): a skill promoted or retired
mid-session and a settings change reach the model as appended notes; no earlier byte of the request changes."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from lsp_agent.app.runtime import open_environment
from lsp_agent.context.instructions import BASE_INSTRUCTIONS
from lsp_agent.core.agent import Agent
from lsp_agent.core.announce import SkillsSeen, announced_skills, skills_note
from lsp_agent.domain.history import Message, Role, TextPart
from lsp_agent.domain.ports import ModelRequest
from lsp_agent.providers.scripted import Script, ScriptedProvider
from lsp_agent.settings.config import load_settings
from tests.helpers import RecordingSink, reply
from tests.unit.test_skills_kit import QUICK, project, validated

SKILL_LINE = "- calc-tests: Run the calc tests"


def _history_bytes(provider: ScriptedProvider, request: ModelRequest) -> bytes:
    """The request's bytes up to the end of its history (what follows — the tail, the effort — may vary)."""
    body = provider.encode_request(request)
    return body[:body.index(b'],"tail":')]


def _assert_each_extends_the_previous(provider: ScriptedProvider) -> None:
    bodies = [_history_bytes(provider, r) for r in provider.requests]
    for earlier, later in itertools.pairwise(bodies):
        assert later.startswith(earlier), "a request rewrote bytes the previous one sent"


async def test_the_prefix_holds_across_a_promotion_a_settings_change_and_a_retirement(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    svc, _, _ = await validated(root)  # a candidate, not yet a skill
    provider = ScriptedProvider(Script(label="test", replies=[reply(text="ok")], repeat_last=True),
                                record_requests=True)
    env = open_environment(root, load_settings(root, {"tools": QUICK}), provider, RecordingSink())
    agent = Agent(env)

    first = agent.start("first task")
    await agent.wait(first.generation)
    sid = first.session_id
    assert SKILL_LINE not in "\n".join(m.text() for m in provider.requests[-1].messages)

    promoted = await svc.promote("calc-tests")
    assert promoted.ok, promoted.line()
    await agent.wait(agent.start("second task", sid).generation)
    notes = [m.text() for m in provider.requests[-1].messages if SKILL_LINE in m.text()]
    assert len(notes) == 1 and notes[0].startswith("[note from lsp-agent]")

    changed = env.settings.model_copy(update={"reasoning_effort": "high", "max_steps": 12})
    agent.reconfigure(settings=changed)
    await agent.wait(agent.start("third task", sid).generation)
    last = provider.requests[-1].messages
    assert "Settings changed for this session: reasoningEffort: None → 'high'; maxSteps: 40 → 12." in last[-1].text()

    retired = await svc.retire("calc-tests")
    assert retired.ok, retired.line()
    await agent.wait(agent.start("fourth task", sid).generation)
    assert "Skills: none are listed any more" in provider.requests[-1].messages[-1].text()

    assert all(r.instructions == BASE_INSTRUCTIONS for r in provider.requests)
    assert len(provider.requests) == 4
    _assert_each_extends_the_previous(provider)


async def test_unchanged_skills_and_settings_are_announced_once(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    svc, _, _ = await validated(root)
    assert (await svc.promote("calc-tests")).ok
    provider = ScriptedProvider(Script(label="test", replies=[reply(text="ok")], repeat_last=True),
                                record_requests=True)
    env = open_environment(root, load_settings(root, {"tools": QUICK}), provider, RecordingSink())
    agent = Agent(env)
    sid = agent.start("one").session_id
    await agent.wait(agent.session(sid).active.id)  # type: ignore[union-attr]
    await agent.wait(agent.start("two", sid).generation)
    agent2 = Agent(env)  # a restart: what was announced is read back from the store
    await agent2.wait(agent2.start("three", sid).generation)
    texts = [m.text() for m in provider.requests[-1].messages]
    assert sum(SKILL_LINE in t for t in texts) == 1
    assert not any("Settings changed" in t for t in texts)
    _assert_each_extends_the_previous(provider)


@given(st.lists(st.tuples(st.sampled_from(["grow", "announce", "compact", "copy"]), st.integers(0, 3)),
                max_size=25))
def test_the_incremental_scan_finds_what_a_full_scan_finds(actions: list[tuple[str, int]]) -> None:
    """SkillsSeen reads only what was appended since its last call; a view that was compacted or copied
    (not an extension of the last one) is read again in full — an announcement compacted away is gone."""
    seen, view = SkillsSeen(), []
    for action, n in actions:
        if action == "grow":
            view = [*view, *(Message(role=Role.USER, parts=[TextPart(text=f"m{i}")]) for i in range(n))]
        elif action == "announce":
            note = skills_note([], f"- skill-{n}: does {n}")
            assert note is not None
            view = [*view, Message(role=Role.USER, parts=[note])]
        elif action == "compact":
            view = view[n:]
        else:
            view = [m.model_copy() for m in view]
        assert seen.latest(view) == announced_skills(view)
