"""The loop: every stop reason, verification derived from the record, cancellation."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsp_agent.core.loop import Generation, collect_reply
from lsp_agent.core.session import AgentSession
from lsp_agent.domain.ports import AssistantReply, ProviderEvent, ReplyDone, TextDelta
from lsp_agent.providers.scripted import ScriptedError, ScriptedReply
from tests.helpers import (
    LOCK_HOLDER,
    RecordingSink,
    call,
    make_env,
    reply,
    run_script,
    verify_config,
    wait_for,
    wait_lock_released,
)

PY = sys.executable


def _check_wants(root: Path, value: str) -> None:
    (root / "check.py").write_text(
        f"import sys, pathlib\nsys.exit(0 if pathlib.Path('result.txt').read_text().strip() == {value!r} else 1)\n")
    verify_config(root, [PY, "check.py"])


async def test_reply_without_tool_calls_stops_final(tmp_path: Path) -> None:
    result, _ = await run_script(tmp_path, [reply(text="nothing to do")])
    assert (result.stop_reason.value, result.steps, result.tool_calls) == ("final", 1, 0)
    assert result.verification.value == "not_run"


async def test_the_reply_stream_is_read_to_its_end_not_left_to_the_finaliser() -> None:
    finished: list[str] = []
    seen: list[str] = []

    async def stream() -> AsyncIterator[ProviderEvent]:
        yield TextDelta(text="hel")
        yield ReplyDone(reply=AssistantReply(text="hello"))
        yield TextDelta(text="after the reply: not shown")
        finished.append("after the reply")  # a provider closes its response here

    reply = await collect_reply(stream(), lambda kind, text: seen.append(text))
    assert (reply.text, seen, finished) == ("hello", ["hel"], ["after the reply"])


async def test_a_run_leaves_no_stream_for_the_event_loops_finaliser(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    finalised: list[str] = []
    hooks = sys.get_asyncgen_hooks()

    def finalizer(agen: Any) -> None:
        finalised.append(agen.__qualname__)
        hooks.finalizer(agen)  # type: ignore[misc]

    sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=finalizer)
    try:
        result, _ = await run_script(tmp_path, [reply(call("read_file", path="a.txt")), reply(text="done")])
    finally:
        sys.set_asyncgen_hooks(*hooks)
    assert result.stop_reason.value == "final"
    assert finalised == []


async def test_spent_budget_stops_step_limit(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    replies = [reply(call("read_file", path="a.txt", start_line=1)), reply(call("list_dir")), reply(text="x")]
    result, _ = await run_script(tmp_path, replies, max_steps=2)
    assert (result.stop_reason.value, result.steps, result.tool_calls) == ("step_limit", 2, 2)


async def test_provider_failure_stops_error_with_cause(tmp_path: Path) -> None:
    failing = ScriptedReply(error=ScriptedError(message="upstream exploded", status=503))
    sink = RecordingSink()
    result, _ = await run_script(tmp_path, [failing], sink=sink)
    assert result.stop_reason.value == "error"
    assert result.error is not None and result.error.status == 503 and "upstream exploded" in result.error.message
    assert sink.types()[-2:] == ["error", "run_finish"]


async def test_identical_calls_warn_at_three_and_stop_loop_at_five(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    same = reply(call("read_file", path="a.txt"))
    result, session = await run_script(tmp_path, [same] * 6 + [reply(text="never")])
    assert result.stop_reason.value == "loop"
    assert result.steps == 5
    outputs = [m.tool_results()[0].output for m in session.history if m.role.value == "tool"]
    assert "WARNING" not in outputs[1] and "WARNING" in outputs[2] and "WARNING" in outputs[4]


async def test_write_after_passing_verify_makes_status_not_run(tmp_path: Path) -> None:
    (tmp_path / "result.txt").write_text("4")
    _check_wants(tmp_path, "4")
    replies = [reply(call("verify_project")),
               reply(call("apply_patch", path="result.txt", old_text="4", new_text="4\n")),
               reply(text="all good, verified")]
    result, _ = await run_script(tmp_path, replies)
    assert (result.stop_reason.value, result.verification.value) == ("final", "not_run")
    assert result.files_changed == ["result.txt"]


async def test_final_claim_of_success_does_not_change_a_failed_check(tmp_path: Path) -> None:
    (tmp_path / "result.txt").write_text("5")
    _check_wants(tmp_path, "4")
    result, _ = await run_script(tmp_path, [reply(call("verify_project")), reply(text="Verified! All tests pass.")])
    assert (result.stop_reason.value, result.verification.value) == ("final", "failed")
    assert result.verification_part_id is not None


async def test_step_limit_can_still_be_verified(tmp_path: Path) -> None:
    (tmp_path / "result.txt").write_text("5")
    _check_wants(tmp_path, "4")
    replies = [reply(call("apply_patch", path="result.txt", old_text="5", new_text="4")),
               reply(call("verify_project")), reply(text="unreached")]
    result, _ = await run_script(tmp_path, replies, max_steps=2)
    assert (result.stop_reason.value, result.verification.value) == ("step_limit", "verified")


async def test_parallel_results_are_appended_in_call_order(tmp_path: Path) -> None:
    for name in "abc":
        (tmp_path / f"{name}.txt").write_text(name * 3 + "\n")
    calls = [call("read_file", path="c.txt"), call("write_file", path="new.txt", content="n\n"),
             call("read_file", path="a.txt"), call("read_file", path="b.txt")]
    _, session = await run_script(tmp_path, [reply(*calls), reply(text="done")])
    results = session.history[2].tool_results()
    assert [r.call_id for r in results] == [c.call_id for c in session.history[1].tool_calls()]
    assert "ccc" in results[0].output and "aaa" in results[2].output and "bbb" in results[3].output
    assert all(r.ok for r in results)


async def test_cancel_mid_tool_kills_the_process_group_and_keeps_partial_output(tmp_path: Path) -> None:
    # The grandchild holds a lock for a minute unless killed; the parent says "started" once it does.
    (tmp_path / "spawn.py").write_text(
        f"import pathlib, subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {LOCK_HOLDER!r}])\n"
        "[time.sleep(0.01) for _ in iter(lambda: pathlib.Path('locked').exists(), True)]\n"
        "print('started', flush=True)\npathlib.Path('spawned').write_text('1')\ntime.sleep(30)\n")
    command = "python spawn.py"
    sink = RecordingSink()
    env = make_env(tmp_path, [reply(call("run_command", command=command)), reply(text="never")], sink)
    generation = Generation(AgentSession(env))
    task = asyncio.ensure_future(generation.run("run it"))
    await wait_for(lambda: (tmp_path / "spawned").exists())  # "started" is written, the grandchild runs
    started = time.monotonic()
    generation.cancel()
    result = await asyncio.wait_for(task, 30)
    assert time.monotonic() - started < 20  # not the 30 s the parent would sleep
    assert result.stop_reason.value == "cancelled"
    output = generation.session.history[2].tool_results()[0]
    assert output.error_kind is not None and output.error_kind.value == "cancelled"
    assert "started" in output.output
    await wait_lock_released(tmp_path / "child.lock")  # the grandchild was killed with its group


async def test_cancel_mid_stream_stops_without_running_calls(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    env = make_env(tmp_path, [reply(call("write_file", path="x.txt", content="x"), delay_ms=5000)])
    generation = Generation(AgentSession(env))
    task = asyncio.ensure_future(generation.run("go"))
    await asyncio.sleep(0.1)
    generation.cancel()
    result = await asyncio.wait_for(task, 30)  # not cancelled, it would run the call and fail the asserts
    assert result.stop_reason.value == "cancelled" and result.tool_calls == 0
    assert not (tmp_path / "x.txt").exists()


async def test_events_follow_opencode_names_in_order(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    sink = RecordingSink()
    await run_script(tmp_path, [reply(call("read_file", path="a.txt"), text="reading"), reply(text="done")], sink=sink)
    kinds = [t for t in sink.types() if t not in ("text_delta", "reasoning_delta")]
    assert kinds == ["step_start", "text", "tool_start", "tool_use", "step_finish",
                     "step_start", "text", "step_finish", "run_finish"]
    finish = sink.of("run_finish")[0].wire()
    assert finish["stopReason"] == "final" and finish["sessionID"] and finish["toolCalls"] == 1


async def test_history_is_persisted_as_it_is_created(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    _, session = await run_script(tmp_path, [reply(call("read_file", path="a.txt")), reply(text="done")])
    stored = session.env.store.messages(session.id)
    assert [m.model_dump() for m in stored] == [m.model_dump() for m in session.history]
    resumed = AgentSession(session.env, session.id)
    assert len(resumed.history) == 4
