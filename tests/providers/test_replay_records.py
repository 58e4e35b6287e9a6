"""Replay records: one `llm.request` event per model request, decisions and hashes only.

The store keeps the conversation itself (messages and parts) so that a session
can be resumed — the user's prompt is a message. What must never hold a prompt
body is the replay record: the `events` rows and the JSONL traces. Credentials
must appear nowhere: not in any store file (database, WAL) nor in any trace.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from lsp_agent.store.db import Store
from tests.providers.loopback import LoopbackServer, Reply, Wire, run_agent, turn, write_workspace

WIRES: list[Wire] = ["chat", "responses"]
KEY = "sk-REPLAY-93c1d7-e5f0aa"
PROMPT = "PROMPT-ZEBRA-QUARTZ-4417: summarise secret-plan.txt for me"
FILE_TEXT = "CONTENT-OF-THE-PLAN-8812: nothing here\n"


def state_files(state: Path) -> list[Path]:
    return sorted(p for p in state.rglob("*") if p.is_file())


@pytest.mark.parametrize("wire", WIRES)
async def test_llm_request_events_hold_decisions_and_hashes_but_no_prompt_and_no_key(
        wire: Wire, server: LoopbackServer, tmp_path: Path, isolated_state: Path) -> None:
    root = write_workspace(tmp_path / "ws", {"secret-plan.txt": FILE_TEXT})
    server.queue(Reply(chunks=[turn(wire, call=("c1", "read_file", {"path": "secret-plan.txt"}))]),
                 Reply(chunks=[turn(wire, call=("c2", "read_file", {"path": "nope.txt"}))]),
                 Reply(chunks=[turn(wire, text="It says nothing.", usage=(900, 5, 0, 0))]))

    run = await run_agent(PROMPT, root, server.url, wire, env={"LSP_AGENT_API_KEY": KEY})

    assert run.returncode == 0, run.stderr
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    files = state_files(isolated_state)
    traces = [p for p in files if p.suffix == ".jsonl" and p.parent.name == "traces"]
    databases = [p for p in files if p.name.startswith("store.db")]
    assert traces and databases
    # The key: nowhere in the state directory (database, WAL, traces).
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
    # The prompt and what the tools read: not in the traces ...
    for path in traces:
        text = path.read_text(encoding="utf-8")
        assert PROMPT not in text and "ZEBRA-QUARTZ" not in text
        assert '"tool": "read_file"' in text  # the trace does record the steps
    # ... but the conversation is in the store (resumable sessions): the search above is real.
    assert any(b"ZEBRA-QUARTZ-4417" in p.read_bytes() for p in databases)
    # ... and not in any replay event row.
    store_path = next(p for p in databases if p.name == "store.db")
    db = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)
    try:
        kinds = [str(kind) for (kind,) in db.execute("SELECT kind FROM events")]
        rows = [str(data) for (data,) in db.execute("SELECT data FROM events")]
    finally:
        db.close()
    # one llm.request per request, the settings the model was told about (core/announce.py), and the run's end
    assert sorted(kinds) == ["announce.settings"] + ["llm.request"] * len(server.requests) + ["run.finish"]
    assert len(server.requests) == 3 and kinds[-1] == "run.finish"
    for data in rows:
        for secret in (KEY, "ZEBRA-QUARTZ", "CONTENT-OF-THE-PLAN", "It says nothing", "nope.txt"):
            assert secret not in data

    store = Store(store_path)
    try:
        events = store.events(run.finish["sessionID"], "llm.request")
    finally:
        store.close()
    assert len(events) == len(server.requests)
    for step, (event, received) in enumerate(zip(events, server.requests, strict=True), start=1):
        assert event["step"] == step and event["generation"] == run.finish["generation"]
        assert event["model"] == "openai-compatible/m"
        # The hashes are of the very bytes that went over the wire.
        assert event["hashes"]["bodySha256"] == hashlib.sha256(received.body).hexdigest()
        assert event["bytes"] == len(received.body)
        assert set(event["hashes"]) == {"bodySha256", "instructionsSha256", "toolsSha256"}
        resolution = event["capabilityResolution"]
        assert resolution["protocol"] == wire
        assert resolution["contextWindow"] == 32_768  # unknown model: the registry's default
        assert resolution["contextPack"] is False and "not declared" in resolution["contextPackReason"]
        assert resolution["reasonNone"] == "model has no effort levels"
        assert "reasoningEffort" not in resolution
    assert [e["capabilityResolution"]["consecutiveToolFailures"] for e in events] == [0, 0, 1]
    assert len({e["hashes"]["instructionsSha256"] for e in events}) == 1
    assert len({e["hashes"]["toolsSha256"] for e in events}) == 1
    assert events[0]["prefixShare"] == 1.0
    assert all(0.9 < e["prefixShare"] <= 1.0 for e in events[1:])
