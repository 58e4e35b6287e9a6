"""The capability thresholds are settings, seen in the bytes the model server receives from the real
CLI: `limits.escalate_after_failures` (failures in a row before the effort is raised),
`limits.context_pack_min_context` (smallest window that gets the long-task pack) and
`limits.context_pack_max_tokens` (largest pack sent). Each at its bound and one past it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_agent.core.capabilities import CONTEXT_PACK, estimate_tokens
from tests.providers.loopback import LoopbackServer, Reply, run_agent, turn, write_workspace
from tests.providers.test_capability_loop import (
    MODEL,
    PACK_HEADING,
    REASONING_MODEL,
    effort,
    instructions,
    llm_requests,
    read,
)


async def test_escalation_waits_for_the_configured_number_of_failures(
        server: LoopbackServer, tmp_path: Path, isolated_state: Path) -> None:
    root = write_workspace(tmp_path / "ws", {}, REASONING_MODEL)
    server.queue(*(Reply(chunks=[turn("chat", call=read(f"c{n}", f"missing-{n}.txt"))]) for n in range(3)),
                 Reply(chunks=[turn("chat", text="Done.")]))

    run = await run_agent("Read the files.", root, server.url, "chat", "--config",
                          "limits.escalate_after_failures=3", model=MODEL)

    assert run.returncode == 0, run.stderr
    # Two failures in a row (the default's bound) no longer escalate; the third does.
    assert [effort("chat", r.json()) for r in server.requests] == [None, None, None, "high"]
    resolutions = [e["capabilityResolution"] for e in llm_requests(isolated_state, run.finish["sessionID"])]
    assert [r["consecutiveToolFailures"] for r in resolutions] == [0, 1, 2, 3]
    assert [r.get("effortSource") for r in resolutions] == [None, None, None, "escalated"]


@pytest.mark.parametrize(("setting", "value", "packed", "reason"), [
    ("context_pack_min_context", 128_000, True, "declared: 128000-token context"),
    ("context_pack_min_context", 128_001, False, "context window 128000 < 128001 tokens"),
    ("context_pack_max_tokens", estimate_tokens(CONTEXT_PACK), True, "declared: 128000-token context"),
    ("context_pack_max_tokens", estimate_tokens(CONTEXT_PACK) - 1, False,
     f"the context pack is {estimate_tokens(CONTEXT_PACK)} tokens, over the "
     f"{estimate_tokens(CONTEXT_PACK) - 1}-token bound"),
], ids=["window-at-minimum", "window-one-below", "pack-at-bound", "pack-one-over"])
async def test_the_context_pack_bounds_are_settings(setting: str, value: int, packed: bool, reason: str,
                                                    server: LoopbackServer, tmp_path: Path,
                                                    isolated_state: Path) -> None:
    root = write_workspace(tmp_path / "ws", {"present.txt": "here\n"}, REASONING_MODEL)  # a 128,000 window
    server.queue(Reply(chunks=[turn("chat", text="Done.")]))

    run = await run_agent("Say done.", root, server.url, "chat", "--config", f"limits.{setting}={value}",
                          model=MODEL)

    assert run.returncode == 0, run.stderr
    assert (PACK_HEADING in instructions("chat", server.requests[0].json())) is packed
    (resolution,) = [e["capabilityResolution"] for e in llm_requests(isolated_state, run.finish["sessionID"])]
    assert resolution["contextPack"] is packed and resolution["contextPackReason"].startswith(reason)
