"""Folding past 70 % of the budget: old tool results become one-line placeholders, in batches, so
the request prefix changes once per batch; the assistant's own messages never fold."""

from __future__ import annotations

from pathlib import Path

from lsp_agent.context.folding import fold_batch, placeholder
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.domain.ports import ModelRequest
from tests.helpers import RecordingSink, call, reply
from tests.unit.test_context_support import context_env, failing_repo, visible_text


def reads(n: int) -> list:  # type: ignore[type-arg]
    return [reply(call("read_file", path=f"data/f{i % 10}.txt", start_line=1 + i // 10)) for i in range(n)]


def extends(previous: ModelRequest, current: ModelRequest) -> bool:
    """`current` carries `previous`'s messages unchanged, in order, and adds to them."""
    old = [m.model_dump() for m in previous.messages]
    return [m.model_dump() for m in current.messages[:len(old)]] == old


async def test_old_results_fold_in_batches_and_the_prefix_changes_only_at_a_batch(tmp_path: Path) -> None:
    failing_repo(tmp_path)
    sink = RecordingSink()
    env, provider = context_env(tmp_path, [*reads(40), reply(text="done")], sink,
                                compaction={"context_window": 16000}, maxSteps=60)
    session = AgentSession(env)
    result = await Generation(session).run("read the data files")
    assert result.stop_reason.value == "final"
    folds = env.store.events(session.id, "context.fold")
    assert 1 <= len(folds) <= 4
    assert all(f["count"] >= 5 for f in folds)  # batches, not slivers
    assert not env.store.events(session.id, "context.compaction")

    requests = provider.requests
    breaks = [i for i in range(1, len(requests)) if not extends(requests[i - 1], requests[i])]
    assert len(breaks) == len(folds)  # every other request is an exact extension of the one before
    records = env.store.events(session.id, "llm.request")
    shares = [r["prefixShare"] for r in records]
    for i in breaks:
        assert 0.3 < shares[i] < 0.99  # the cached prefix reaches the first folded result
    for i in range(1, len(records)):
        if i not in breaks:  # all of the previous request is reused, but for its closing bytes
            assert shares[i] * records[i]["bytes"] >= records[i - 1]["bytes"] - 64

    last = requests[-1]
    text = visible_text(last)
    assert "[folded] read_file data/f0.txt, 20 lines — " in text and "re-read if needed" in text
    # The assistant's calls are all there, unfolded; the last 8 messages are verbatim.
    assert sum(len(m.tool_calls()) for m in last.messages) == 40
    stored = {p.id: p for m in session.history for p in m.tool_results()}
    for message in last.messages[-8:]:
        for part in message.tool_results():
            assert part.output == stored[part.id].output
    # The stored results are whole; a fold changes only what the model is sent.
    assert all(not p.output.startswith("[folded]") for p in stored.values())
    notice = next(n for n in sink.of("notice") if n.kind == "context_fold")
    assert "folded" in notice.message and notice.data is not None and notice.data["parts"]


def test_a_batch_takes_every_old_result_but_never_the_recent_ones_or_the_latest_check() -> None:
    def tool(name: str, output: str, **meta: object) -> Message:
        return Message(role=Role.TOOL, parts=[ToolResultPart(call_id="c", name=name, ok=True, output=output,
                                                             metadata=dict(meta))])

    big = "x" * 2000
    check = tool("verify_project", big, envelope={"status": "failed", "checks": []})
    view = [Message(role=Role.USER, parts=[TextPart(text="task " + big)]),
            Message(role=Role.ASSISTANT, parts=[ToolCallPart(call_id="c", name="read_file", arguments=big)]),
            tool("read_file", big, read=["a.py"], lines=340, start_line=1, end_line=340),
            check, tool("run_command", "OK: exit=0\n" + big), tool("read_file", "short"),
            *[tool("read_file", big, read=[f"r{i}.py"]) for i in range(8)]]
    batch = fold_batch(view, {}, keep_recent=8, min_chars=400)
    read_part = view[2].parts[0]
    assert set(batch.placeholders) == {read_part.id, view[4].parts[0].id}
    assert batch.placeholders[read_part.id].startswith("[folded] read_file a.py, 340 lines — 2000 characters")
    assert batch.first_message == 2
    run = view[4].parts[0]
    assert isinstance(run, ToolResultPart)
    assert placeholder(run).startswith("[folded] run_command: OK: exit=0 — ") and "run it again" in placeholder(run)
    # Already folded parts are not folded again.
    assert fold_batch(view, batch.placeholders, keep_recent=8, min_chars=400).placeholders == {}
