"""Capability resolution through the real loop, seen in the bytes the server receives.

Effort: two consecutive failed tool calls raise the reasoning effort of the next
request; a success resets it; a configured effort is the level it starts from. Context pack:
in the instructions only for a model with >= 64,000 tokens of context,
reasoning and tools. The `llm.request` replay events record the same decisions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lsp_agent.core.capabilities import CONTEXT_PACK
from lsp_agent.store.db import Store
from tests.providers.loopback import LoopbackServer, Reply, Wire, run_agent, turn, write_workspace

WIRES: list[Wire] = ["chat", "responses"]
MODEL = "openai-compatible/thinker"
REASONING_MODEL = """\
[models."openai-compatible/thinker"]
contextWindow = 128000
reasoning = true
tools = true
efforts = ["low", "medium", "high"]
"""
PACK_HEADING = CONTEXT_PACK.splitlines()[0]


def read(call_id: str, path: str) -> tuple[str, str, dict[str, Any]]:
    return call_id, "read_file", {"path": path}


def queue_fail_fail_ok_fail(server: LoopbackServer, wire: Wire) -> None:
    calls = [read("c1", "missing-1.txt"), read("c2", "missing-2.txt"), read("c3", "present.txt"),
             read("c4", "missing-3.txt")]
    server.queue(*(Reply(chunks=[turn(wire, call=c)]) for c in calls),
                 Reply(chunks=[turn(wire, text="Done.")]))


def effort(wire: Wire, body: dict[str, Any]) -> str | None:
    value = body.get("reasoning_effort") if wire == "chat" else body.get("reasoning", {}).get("effort")
    assert value is None or isinstance(value, str)
    return value


def instructions(wire: Wire, body: dict[str, Any]) -> str:
    text = body["messages"][0]["content"] if wire == "chat" else body["instructions"]
    assert isinstance(text, str)
    return text


def llm_requests(state: Path, session_id: str) -> list[dict[str, Any]]:
    store = Store(next(state.rglob("store.db")))
    try:
        return store.events(session_id, "llm.request")
    finally:
        store.close()


@pytest.mark.parametrize("wire", WIRES)
async def test_two_failures_raise_the_effort_of_the_next_request_and_a_success_resets_it(
        wire: Wire, server: LoopbackServer, tmp_path: Path, isolated_state: Path) -> None:
    root = write_workspace(tmp_path / "ws", {"present.txt": "here\n"}, REASONING_MODEL)
    queue_fail_fail_ok_fail(server, wire)

    run = await run_agent("Read the files.", root, server.url, wire, model=MODEL)

    assert run.returncode == 0, run.stderr
    assert run.finish["toolErrors"] == 3
    bodies = [r.json() for r in server.requests]
    assert [effort(wire, b) for b in bodies] == [None, None, "high", None, None]
    events = llm_requests(isolated_state, run.finish["sessionID"])
    resolutions = [e["capabilityResolution"] for e in events]
    assert [r["consecutiveToolFailures"] for r in resolutions] == [0, 1, 2, 0, 1]
    assert [r.get("effortSource") for r in resolutions] == [None, None, "escalated", None, None]
    assert resolutions[2]["reasoningEffort"] == "high"
    assert resolutions[0]["reasonNone"].startswith("no effort configured")
    # The model qualifies for the context pack: in every request, recorded as chosen.
    assert all(PACK_HEADING in instructions(wire, b) for b in bodies)
    assert all(r["contextPack"] is True and r["contextWindow"] == 128_000 for r in resolutions)
    assert all(r["protocol"] == wire for r in resolutions)


async def test_a_configured_effort_is_the_base_that_escalation_raises(server: LoopbackServer, tmp_path: Path,
                                                                     isolated_state: Path) -> None:
    # A configured effort used to be taken for a per-run choice, which switched escalation off.
    root = write_workspace(tmp_path / "ws", {"present.txt": "here\n"}, REASONING_MODEL)
    queue_fail_fail_ok_fail(server, "chat")

    run = await run_agent("Read the files.", root, server.url, "chat", "--config", 'reasoningEffort="low"',
                          model=MODEL)

    assert run.returncode == 0, run.stderr
    assert [effort("chat", r.json()) for r in server.requests] == ["low", "low", "medium", "low", "low"]
    resolutions = [e["capabilityResolution"] for e in llm_requests(isolated_state, run.finish["sessionID"])]
    assert [r["consecutiveToolFailures"] for r in resolutions] == [0, 1, 2, 0, 1]
    assert [r["effortSource"] for r in resolutions] == ["settings", "settings", "escalated", "settings", "settings"]


async def test_a_configured_top_effort_stays_at_the_top(server: LoopbackServer, tmp_path: Path,
                                                         isolated_state: Path) -> None:
    root = write_workspace(tmp_path / "ws", {"present.txt": "here\n"}, REASONING_MODEL)
    queue_fail_fail_ok_fail(server, "chat")

    run = await run_agent("Read the files.", root, server.url, "chat", "--config", 'reasoningEffort="high"',
                          model=MODEL)

    assert run.returncode == 0, run.stderr
    assert [effort("chat", r.json()) for r in server.requests] == ["high"] * 5
    resolutions = [e["capabilityResolution"] for e in llm_requests(isolated_state, run.finish["sessionID"])]
    assert resolutions[2]["effortSource"] == "escalated"


@pytest.mark.parametrize(("declaration", "reason"), [
    ("contextWindow = 32000\nreasoning = true\ntools = true\n", "context window 32000 < 64000"),
    ("contextWindow = 128000\nreasoning = false\ntools = true\n", "declared without reasoning"),
], ids=["small-window", "no-reasoning"])
async def test_the_context_pack_is_left_out_when_the_model_does_not_qualify(
        declaration: str, reason: str, server: LoopbackServer, tmp_path: Path, isolated_state: Path) -> None:
    config = f'[models."openai-compatible/thinker"]\n{declaration}'
    root = write_workspace(tmp_path / "ws", {"present.txt": "here\n"}, config)
    server.queue(Reply(chunks=[turn("responses", call=read("c1", "present.txt"))]),
                 Reply(chunks=[turn("responses", text="Done.")]))

    run = await run_agent("Read present.txt.", root, server.url, "responses", model=MODEL)

    assert run.returncode == 0, run.stderr
    assert all(PACK_HEADING not in instructions("responses", r.json()) for r in server.requests)
    resolutions = [e["capabilityResolution"] for e in llm_requests(isolated_state, run.finish["sessionID"])]
    assert len(resolutions) == 2
    assert all(r["contextPack"] is False and reason in r["contextPackReason"] for r in resolutions)
