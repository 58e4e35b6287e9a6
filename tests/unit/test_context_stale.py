"""Stale observations as appended notes (after the agent's own edit and after an outside change),
and tail_reminders: per-request reminders at the end of the request, never stored."""

from __future__ import annotations

from pathlib import Path

from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from tests.helpers import call, reply
from tests.unit.test_context_support import context_env, failing_repo, visible_text


def extends(previous: list[dict[str, object]], current: list[dict[str, object]]) -> bool:
    return current[:len(previous)] == previous


async def test_a_read_followed_by_an_edit_is_marked_stale_by_an_appended_note(tmp_path: Path) -> None:
    failing_repo(tmp_path)
    replies = [reply(call("read_file", path="model.py")),
               reply(call("apply_patch", path="model.py", old_text="X = 1", new_text="X = 2")),
               reply(call("apply_patch", path="model.py", old_text="X = 2", new_text="X = 3")),
               reply(text="done")]
    env, provider = context_env(tmp_path, replies)
    session = AgentSession(env)
    await Generation(session).run("fix model.py")
    third, fourth = provider.requests[2], provider.requests[3]
    note = "[stale: model.py rewritten at step 2; re-read before editing]"
    assert note in visible_text(third)
    assert note not in visible_text(provider.requests[1])
    # Appended after the edit's result, never written into the earlier read: the prefix is intact.
    dumped = [[m.model_dump() for m in r.messages] for r in provider.requests]
    assert all(extends(dumped[i - 1], dumped[i]) for i in range(1, len(dumped)))
    read = next(p for m in session.history for p in m.tool_results() if p.name == "read_file")
    assert "stale" not in read.output and f"part {read.id}" in visible_text(third)
    # One note per stale read: the second edit of the same file adds no second note.
    assert visible_text(fourth).count("[stale: model.py") == 1


async def test_a_change_outside_the_agent_marks_earlier_reads_stale(tmp_path: Path) -> None:
    failing_repo(tmp_path)
    replies = [reply(call("read_file", path="view.py")), reply(text="read it"),
               reply(call("apply_patch", path="view.py", old_text="VIEW = 1", new_text="VIEW = 3")),
               reply(call("read_file", path="view.py")),
               reply(call("apply_patch", path="view.py", old_text="VIEW = 2", new_text="VIEW = 3")),
               reply(text="done")]
    env, provider = context_env(tmp_path, replies)
    session = AgentSession(env)
    await Generation(session).run("look at view.py")
    (tmp_path / "view.py").write_text("VIEW = 2\n")
    session.note_external_change(["view.py"])  # what the language server's watcher reports
    await Generation(session).run("now change it")
    text = visible_text(provider.requests[2])
    assert "[stale: changed outside the agent; re-read before editing]" in text and "view.py" in text
    patches = [p for m in session.history for p in m.tool_results() if p.name == "apply_patch"]
    # The earlier read is stale: the edit made from it is refused until the file is read again.
    assert not patches[0].ok and "must be read again" in patches[0].output
    assert patches[1].ok and (tmp_path / "view.py").read_text() == "VIEW = 3\n"


async def test_tail_reminders_go_last_in_the_request_and_nothing_stored_changes(tmp_path: Path) -> None:
    failing_repo(tmp_path)
    replies = [reply(call("read_file", path="model.py")), reply(call("verify_project")),
               reply(call("apply_patch", path="model.py", old_text="X = 1", new_text="X = 2")),
               reply(text="done")]
    env, provider = context_env(tmp_path, replies, experimental={"tail_reminders": True}, maxSteps=10)
    session = AgentSession(env)
    await Generation(session).run("fix it")
    tails = [r.tail for r in provider.requests]
    assert all(len(t) == 1 and t[0].startswith("[reminder from lsp-agent for this request only") for t in tails)
    assert "Step 1 of 10: 9 more after this one." in tails[0][0]
    assert "Verification: not run" in tails[0][0]
    assert "Verification: FAILED" in tails[2][0]
    assert "Stale reads, re-read before editing: model.py (rewritten at step 3)." in tails[3][0]
    stored = "\n".join(p.text for m in session.history for p in m.parts if hasattr(p, "text"))
    assert "[reminder from lsp-agent" not in stored
    # The reminder varies per request but sits after the history: the messages still extend.
    dumped = [[m.model_dump() for m in r.messages] for r in provider.requests]
    assert all(extends(dumped[i - 1], dumped[i]) for i in range(1, len(dumped)))


async def test_without_the_flag_there_is_no_tail(tmp_path: Path) -> None:
    env, provider = context_env(tmp_path, [reply(text="done")])
    await Generation(AgentSession(env)).run("hi")
    assert provider.requests[0].tail == []
