"""Prefix stability (the provider's prompt cache depends on it), proven on the bytes a real server receives.

A 30-step run of the real CLI (the loopback model asks for a tool call at every
step, then answers) and a second generation in the same session: every request's
message/item list starts with the previous request's, element for element, and
everything else (instructions, tools, model, options) is byte-identical across
all requests of both generations. Tool results carry no absolute temp paths and
no timestamps.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.providers.loopback import (
    LoopbackServer,
    Reply,
    Wire,
    chat_turn,
    extends,
    message_list,
    responses_turn,
    run_agent,
    static_fields,
    write_workspace,
)

WIRES: list[Wire] = ["chat", "responses"]
STEPS = 30
NOTES = "".join(f"note {i}: keep the cache warm\n" for i in range(1, 13))
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\b\d{10,13}\b")


def tool_call(step: int) -> tuple[str, str, dict[str, Any]]:
    """Varying calls (the loop guard stops identical ones), including a failing one."""
    call_id = f"call_{step:03d}"
    if step % 7 == 0:
        return call_id, "list_dir", {"path": "."}
    if step % 11 == 0:
        return call_id, "read_file", {"path": "missing.txt"}
    start = step % 10 + 1
    return call_id, "read_file", {"path": "docs/notes.txt", "start_line": start, "end_line": start + 2}


def model_turn(wire: Wire, step: int, *, text: str = "", last: bool = False) -> Reply:
    usage = (1000 + 50 * step, 12, 4, 900)
    call = None if last else tool_call(step)
    if wire == "chat":
        return Reply(chunks=[chat_turn(text=text, call=call, usage=usage)], chunk_delay=0)
    # Responses: a reasoning item with encrypted content at every step, carried back in later inputs.
    reasoning = (f"thinking about step {step}", f"ENC{step:03d}" + "x" * 40)
    return Reply(chunks=[responses_turn(text=text, call=call, usage=usage, reasoning=reasoning)], chunk_delay=0)


def tool_outputs(wire: Wire, items: list[Any]) -> list[str]:
    if wire == "chat":
        return [m["content"] for m in items if m.get("role") == "tool"]
    return [i["output"] for i in items if i.get("type") == "function_call_output"]


@pytest.mark.parametrize("wire", WIRES)
async def test_requests_extend_the_previous_one_over_30_steps_and_a_second_generation(
        wire: Wire, server: LoopbackServer, tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws", {"docs/notes.txt": NOTES, "src/app.py": "print('hi')\n"})
    server.queue(*(model_turn(wire, step) for step in range(1, STEPS)),
                 model_turn(wire, STEPS, text="Read the notes.", last=True))

    first = await run_agent("Read the notes, a few lines at a time.", root, server.url, wire)

    assert first.returncode == 0, first.stderr
    assert first.finish["stopReason"] == "final" and first.finish["steps"] == STEPS
    assert len(server.requests) == STEPS
    session_id = first.finish["sessionID"]
    server.queue(model_turn(wire, 101), model_turn(wire, 102, text="Done again.", last=True))

    second = await run_agent("Once more, briefly.", root, server.url, wire, "--session", session_id)

    assert second.returncode == 0, second.stderr
    assert second.finish["sessionID"] == session_id and second.finish["generation"] != first.finish["generation"]
    assert len(server.requests) == STEPS + 2
    bodies = [r.json() for r in server.requests]
    # Static content: byte-identical in every request of both generations.
    assert len({static_fields(wire, b) for b in bodies}) == 1
    assert len({json.dumps(b["tools"]) for b in bodies}) == 1
    if wire == "chat":
        assert len({json.dumps(b["messages"][0]) for b in bodies}) == 1
        assert bodies[0]["messages"][0]["role"] == "system"
    else:
        assert len({json.dumps(b["instructions"]) for b in bodies}) == 1
    # History: append-only, each list a strict extension of the previous one.
    lists = [message_list(wire, b) for b in bodies]
    for index in range(1, len(lists)):
        assert extends(lists[index - 1], lists[index]), f"request {index + 1} rewrote earlier history"
        assert len(lists[index]) > len(lists[index - 1])
    # The second generation starts where the first ended: its final answer, then the new prompt.
    assert json.dumps(lists[STEPS]).count("Read the notes.") == 1
    assert "Once more, briefly." in json.dumps(lists[STEPS][-1])
    if wire == "responses":
        # Reasoning items travel back with their encrypted content and without server ids.
        reasoning = [i for i in lists[-1] if i.get("type") == "reasoning"]
        assert [r["encrypted_content"][:6] for r in reasoning] == (
            [f"ENC{s:03d}" for s in range(1, STEPS + 1)] + ["ENC101"])
        assert all("id" not in r for r in reasoning)
    # Tool results are deterministic: no workspace path, no state path, no timestamps.
    raw = b"".join(r.body for r in server.requests).decode()
    for spelled in {str(root), str(root.resolve()), str(tmp_path)}:
        assert spelled not in raw
    outputs = tool_outputs(wire, lists[-1])
    assert len(outputs) == STEPS - 1 + 1
    assert any(o.startswith("ERROR:") for o in outputs) and any("notes.txt" in o for o in outputs)
    for output in outputs:
        assert not TIMESTAMP.search(output), output
