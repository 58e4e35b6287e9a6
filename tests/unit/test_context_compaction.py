"""Compaction: a checked, repaired summary replaces older history (originals kept); its guards;
`auto = false` overflow; and the fresh read a compaction requires before an edit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lsp_agent.context.view import compaction_of
from lsp_agent.core.agent import Agent
from lsp_agent.core.errors import AgentError
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from lsp_agent.protocol.errors import status_of
from lsp_agent.providers.scripted import ScriptedReply
from tests.helpers import RecordingSink, call, reply, wait_for
from tests.unit.test_context_support import (
    COMPACTION as MARKER,
)
from tests.unit.test_context_support import (
    context_env,
    failing_repo,
    visible_text,
)

TASK = "Make the type check pass by fixing model.py."
CONSTRAINT = "Also: do not modify view.py, it is generated."


def reads(n: int, offset: int = 0) -> list[ScriptedReply]:
    return [reply(call("read_file", path=f"data/f{(i + offset) % 10}.txt", start_line=1 + i // 10)) for i in range(n)]


async def two_generations(root: Path, sink: RecordingSink | None = None, **settings: object) -> tuple[Agent, str]:
    """Generation 1: a failed edit, a failed check, some reads. Generation 2 (the user's second
    message) states a constraint once. The session is idle afterwards."""
    failing_repo(root, {"AGENTS.md": "# Project rules\n- Use four spaces.\nNever commit generated files.\n"})
    replies = [reply(call("apply_patch", path="model.py", old_text="X = 5", new_text="X = 2")),
               reply(call("verify_project")), *reads(6), reply(text="Paused."), *reads(4, 3), reply(text="Noted.")]
    env, _ = context_env(root, replies, sink, compaction={"keep_recent_messages": 4})
    agent = Agent(env)
    first = agent.start(TASK)
    await agent.wait(first.generation)
    second = agent.start(CONSTRAINT, first.session_id)
    await agent.wait(second.generation)
    return agent, first.session_id


def pointer_of(agent: Agent, session_id: str, predicate: object) -> str:
    for message in agent.session(session_id).history:
        for part in message.parts:
            if predicate(part):  # type: ignore[operator]
                return f"{message.id}/{part.id}"
    raise AssertionError("no such part")


async def test_summary_missing_the_constraint_and_failed_attempt_is_repaired_with_pointers(tmp_path: Path) -> None:
    sink = RecordingSink()
    agent, sid = await two_generations(tmp_path, sink)
    task = pointer_of(agent, sid, lambda p: getattr(p, "text", None) == TASK)
    constraint = pointer_of(agent, sid, lambda p: getattr(p, "text", None) == CONSTRAINT)
    attempt = pointer_of(agent, sid, lambda p: getattr(p, "name", None) == "apply_patch" and hasattr(p, "output"))
    check = pointer_of(agent, sid, lambda p: getattr(p, "name", None) == "verify_project" and hasattr(p, "output"))
    # The model's summary cites the task and the failing check, but drops the constraint and the attempt.
    summary = (f"1. Task: fix the type check [{task}]. 4. Failing: model.py:1 [{check}]. "
               "6. Next: change X in model.py.")
    provider = agent.env.provider
    provider.script.replies.append(ScriptedReply(when=MARKER, text=summary))  # type: ignore[attr-defined]

    outcome = await agent.context_requests.compact(sid)

    assert outcome.status == "compacted" and outcome.source == "model"
    repaired = {i.pointer: i for i in outcome.repaired}
    assert constraint in repaired and attempt in repaired
    assert task not in repaired and check not in repaired
    assert {"AGENTS.md:L2", "AGENTS.md:L3"} <= set(repaired)  # instruction-file constraints too
    session = agent.session(sid)
    marker = session.history[-1]
    text = marker.text()
    assert text.startswith("[compaction summary #1 by lsp-agent")
    assert summary in text
    assert f"- [{constraint}] user: {CONSTRAINT}" in text
    assert f"- [{attempt}] failed attempt: apply_patch " in text and '"old_text":"X = 5"' in text
    assert "- [AGENTS.md:L3] constraint: Never commit generated files." in text
    # The pointers lead back to the stored originals.
    message_id, part_id = constraint.split("/")
    stored = agent.env.store.part(part_id)
    assert stored is not None and stored[1] == message_id and getattr(stored[2], "text", "") == CONSTRAINT
    # The record: the marker names the range it replaced and what was repaired; events say the same.
    info = compaction_of(marker)
    assert info is not None and set(info["repaired"]) == set(repaired)
    assert info["keepFrom"] == session.context_view()[1].id
    events = agent.env.store.events(sid)
    assert [e["kind"] for e in events if e["kind"].startswith("context.")] == ["context.compaction", "context.repair"]
    assert {n.kind for n in sink.of("notice")} >= {"context_compaction", "compaction_repair"}
    # The model now sees the summary first, then the kept tail; the store still has everything.
    view = session.context_view()
    assert view[0] is marker and len(view) < len(session.history)
    assert len(agent.env.store.messages(sid)) == len(session.history)


async def test_the_next_generation_after_a_compaction_continues_from_the_summary(tmp_path: Path) -> None:
    agent, sid = await two_generations(tmp_path)
    provider = agent.env.provider
    replies = provider.script.replies  # type: ignore[attr-defined]
    replies.append(ScriptedReply(when=MARKER, text="Summary."))
    replies.append(reply(text="Continuing after the summary."))
    turns_before = sum(1 for m in agent.session(sid).history if m.role.value == "assistant")
    assert (await agent.context_requests.compact(sid)).status == "compacted"
    started = agent.start("go on", sid)
    result = await agent.wait(started.generation)
    assert result is not None and result.stop_reason.value == "final"
    last = agent.session(sid).history[-1]
    # The scripted model counted the turns the summary stands for: it gave the next reply, not an old one.
    assert last.text() == "Continuing after the summary."
    assert sum(1 for m in agent.session(sid).history if m.role.value == "assistant") == turns_before + 1
    request = provider.requests[-1]  # type: ignore[attr-defined]
    assert visible_text(request).count("[compaction summary #1") == 1 and TASK in visible_text(request)


async def test_auto_false_overflow_is_an_error_stop_with_a_clear_message(tmp_path: Path) -> None:
    failing_repo(tmp_path)
    sink = RecordingSink()
    env, provider = context_env(tmp_path, reads(60), sink, compaction={"auto": False, "context_window": 6000},
                                maxSteps=100)
    session = AgentSession(env)
    result = await Generation(session).run(TASK)
    assert result.stop_reason.value == "error" and result.error is not None
    assert result.error.kind == "context_overflow"
    message = result.error.message
    assert "compaction.auto = false" in message and "Nothing was truncated" in message and "4500" in message
    assert sink.types()[-2:] == ["error", "run_finish"]
    assert not [m for m in session.history if compaction_of(m) is not None]
    assert env.store.events(session.id, "context.overflow")
    # Every request that was sent fit; the one that would not was never sent.
    assert max(r["tokens"] for r in env.store.events(session.id, "llm.request")) <= 4500
    assert len(provider.requests) == result.steps - 1


async def test_a_compaction_that_frees_too_little_stops_the_run_and_says_so(tmp_path: Path) -> None:
    failing_repo(tmp_path)
    sink = RecordingSink()
    bloated = ScriptedReply(when=MARKER, text="A very long summary. " * 1500)  # ~8,000 tokens
    env, _ = context_env(tmp_path, [*reads(60), bloated], sink, compaction={"context_window": 16000}, maxSteps=100)
    session = AgentSession(env)
    result = await Generation(session).run(TASK)
    assert result.stop_reason.value == "error" and result.error is not None
    assert result.error.kind == "compaction_ineffective"
    assert "would free too little" in result.error.message and "was not applied" in result.error.message
    (record,) = env.store.events(session.id, "context.compaction")
    assert record["applied"] is False and record["tokensAfter"] > record["tokensBefore"] * 0.8
    assert not [m for m in session.history if compaction_of(m) is not None]
    assert "context_compaction_stopped" in {n.kind for n in sink.of("notice")}


async def test_only_one_compaction_runs_per_session_at_a_time(tmp_path: Path) -> None:
    agent, sid = await two_generations(tmp_path)
    replies = agent.env.provider.script.replies  # type: ignore[attr-defined]
    replies.append(ScriptedReply(when=MARKER, text="Slow summary.", delay_ms=200))
    first = asyncio.ensure_future(agent.context_requests.compact(sid))
    await wait_for(lambda: agent.session(sid).context.compacting)
    with pytest.raises(AgentError) as refused:
        await agent.context_requests.compact(sid)
    assert (status_of(refused.value), refused.value.kind) == (409, "compaction_in_progress")
    assert (await first).status == "compacted"
    assert len([m for m in agent.session(sid).history if compaction_of(m) is not None]) == 1


async def test_compact_on_a_running_session_happens_before_its_next_request(tmp_path: Path) -> None:
    failing_repo(tmp_path)
    slow = [r.model_copy(update={"delay_ms": 20}) for r in reads(10)]
    replies = [*slow, reply(text="done"), ScriptedReply(when=MARKER, text="Summary while running.")]
    env, provider = context_env(tmp_path, replies, compaction={"keep_recent_messages": 2})
    agent = Agent(env)
    started = agent.start(TASK)
    await wait_for(lambda: len(provider.requests) >= 6)
    outcome = await agent.context_requests.compact(started.session_id)
    assert outcome.status == "in_progress"
    result = await agent.wait(started.generation)
    assert result is not None and result.stop_reason.value == "final"
    (record,) = env.store.events(started.session_id, "context.compaction")
    assert record["trigger"] == "manual" and record["applied"] is True and 6 <= record["step"] <= 8
    assert any(MARKER in t for r in provider.requests for t in r.tail)


async def test_editing_a_file_after_a_compaction_needs_a_fresh_read(tmp_path: Path) -> None:
    failing_repo(tmp_path)
    replies = [reply(call("read_file", path="model.py")), *reads(6), reply(text="read enough"),
               reply(call("apply_patch", path="model.py", old_text="X = 1", new_text="X = 2")),
               reply(call("read_file", path="model.py")),
               reply(call("apply_patch", path="model.py", old_text="X = 1", new_text="X = 2")),
               reply(text="fixed"), ScriptedReply(when=MARKER, text="Summary: model.py has X = 1.")]
    env, _ = context_env(tmp_path, replies, compaction={"keep_recent_messages": 2})
    agent = Agent(env)
    first = agent.start(TASK)
    await agent.wait(first.generation)
    assert (await agent.context_requests.compact(first.session_id)).status == "compacted"
    second = agent.start("now fix it", first.session_id)
    await agent.wait(second.generation)
    patches = [p for m in agent.session(first.session_id).history for p in m.tool_results() if p.name == "apply_patch"]
    assert not patches[0].ok and "model.py must be read again before it is edited" in patches[0].output
    assert patches[1].ok and (tmp_path / "model.py").read_text() == "X = 2\n"


async def test_a_resumed_session_keeps_its_compacted_and_folded_view(tmp_path: Path) -> None:
    agent, sid = await two_generations(tmp_path)
    agent.env.provider.script.replies.append(ScriptedReply(when=MARKER, text="Summary."))  # type: ignore[attr-defined]
    assert (await agent.context_requests.compact(sid)).status == "compacted"
    live = agent.session(sid)
    live.context.folded["x"] = "ignored: no such part"
    resumed = AgentSession(agent.env, sid)
    assert [m.model_dump() for m in resumed.context_view()] == [m.model_dump() for m in live.context_view()]
    info = compaction_of(resumed.context_view()[0])
    assert info is not None and info["seq"] == 1


async def test_a_follow_up_queued_during_a_compaction_starts_after_it(tmp_path: Path) -> None:
    agent, sid = await two_generations(tmp_path)
    replies = agent.env.provider.script.replies  # type: ignore[attr-defined]
    replies += [ScriptedReply(when=MARKER, text="Summary.", delay_ms=150), reply(text="follow-up answered")]
    compaction = asyncio.ensure_future(agent.context_requests.compact(sid))
    await wait_for(lambda: agent.session(sid).context.compacting)
    with pytest.raises(AgentError) as refused:
        agent.start("not now", sid)
    assert status_of(refused.value) == 409
    item, started = agent.follow_ups.add(sid, "and then?")
    assert started is None and item.status.value == "queued"
    assert (await compaction).status == "compacted"
    session = agent.session(sid)
    assert session.active is not None
    await wait_for(lambda: session.active is None)
    assert session.history[-1].text() == "follow-up answered"


async def test_summary_without_files_touched_and_next_step_gets_both_put_back(tmp_path: Path) -> None:
    agent, sid = await two_generations(tmp_path)
    task = pointer_of(agent, sid, lambda p: getattr(p, "text", None) == TASK)
    summary = f"1. Task: fix the type check [{task}]."  # no files, no next step
    agent.env.provider.script.replies.append(ScriptedReply(when=MARKER, text=summary))  # type: ignore[attr-defined]

    outcome = await agent.context_requests.compact(sid)

    assert outcome.status == "compacted"
    repaired = {i.pointer: i for i in outcome.repaired}
    files = {p for p, i in repaired.items() if i.kind == "file"}
    assert "data/f0.txt" in files and all(p.startswith("data/f") for p in files)
    assert repaired["next step"].kind == "next_step" and "fix the failing check" in repaired["next step"].text
    text = agent.session(sid).history[-1].text()
    assert "- [data/f0.txt] file: read at step " in text
    assert "- [next step] next step: fix the failing check" in text


async def test_summary_naming_the_files_and_the_next_step_keeps_them_unrepaired(tmp_path: Path) -> None:
    agent, sid = await two_generations(tmp_path)
    session = agent.session(sid)
    touched = sorted({str(p) for m in session.history for r in m.tool_results() for p in r.metadata.get("read") or []})
    # f1.txt is cited only as a longer path's substring: that is not citing it.
    named = ", ".join(p for p in touched if p != "data/f1.txt")
    summary = f"5. Files: {named}; data/f1.txt.bak. 6. Next step: fix X in model.py."
    agent.env.provider.script.replies.append(ScriptedReply(when=MARKER, text=summary))  # type: ignore[attr-defined]

    outcome = await agent.context_requests.compact(sid)

    kinds = {(i.kind, i.pointer) for i in outcome.repaired}
    assert ("file", "data/f1.txt") in kinds
    assert not any(k == "file" and p != "data/f1.txt" for k, p in kinds)
    assert not any(k == "next_step" for k, _ in kinds)
