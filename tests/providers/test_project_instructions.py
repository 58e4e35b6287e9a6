"""Project instructions reach the model: the real `lsp-agent run` CLI against a loopback model
server that records every request body.

AGENTS.md and `.lsp-agent/instructions.md` are sent in one message right after the system prompt,
before the task; every later request repeats it in the same place byte for byte (the provider's
cached prefix survives); a change between runs is an appended note, never an edit of what was sent;
an oversized file is cut with a marker; the transcript shows what was sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.providers.loopback import LoopbackServer, Reply, extends, message_list, run_agent, turn, write_workspace

RULE = "AGENTS-MARKER-4d1f: indent with tabs"
OWN = "OWN-MARKER-88ac: run the linter"
CHANGED = "AGENTS-MARKER-CHANGED-5e02: indent with two spaces"
TAIL = "TAIL-MARKER-never-sent-31b7"


def _bodies(server: LoopbackServer) -> list[dict[str, Any]]:
    return [r.json() for r in server.requests]


def _holding(messages: list[Any], text: str) -> list[int]:
    return [i for i, m in enumerate(messages) if text in json.dumps(m, ensure_ascii=False)]


def _two_turns(server: LoopbackServer) -> None:
    server.queue(Reply(chunks=[turn("chat", call=("call_1", "list_dir", {"path": "."}))]),
                 Reply(chunks=[turn("chat", text="done")]))


async def test_instructions_open_the_session_and_stay_in_place(server: LoopbackServer, tmp_path: Path,
                                                               isolated_state: Path) -> None:
    root = write_workspace(tmp_path / "ws", {"AGENTS.md": f"# Rules\n- {RULE}\n",
                                             ".lsp-agent/instructions.md": f"{OWN}\n", "a.txt": "x\n"})
    _two_turns(server)
    run = await run_agent("List the files.", root, server.url, "chat")
    assert run.finish["stopReason"] == "final", run.stderr
    first, second = (message_list("chat", b) for b in _bodies(server))
    # right after the system prompt, before the task; the workspace's own file after AGENTS.md
    assert first[0]["role"] == "system" and _holding(first, RULE) == [1] and _holding(first, OWN) == [1]
    content = json.dumps(first[1])
    assert content.index(RULE) < content.index(OWN)
    assert "List the files." in json.dumps(first[2])
    assert extends(first, second) and _holding(second, RULE) == [1]  # prefix-stable
    notices = [e for e in run.of("notice") if e.get("kind") == "instructions"]
    assert len(notices) == 1 and "AGENTS.md" in notices[0]["message"], run.events

    # changed between runs: the same session's next request keeps what was sent and appends a note
    (root / "AGENTS.md").write_text(f"- {CHANGED}\n", encoding="utf-8")
    server.queue(Reply(chunks=[turn("chat", text="ok")]))
    again = await run_agent("Go on.", root, server.url, "chat", "--session", run.finish["sessionID"])
    assert again.finish["stopReason"] == "final", again.stderr
    third = message_list("chat", _bodies(server)[2])
    assert third[:len(second)] == second  # nothing sent before was rewritten
    [note] = _holding(third, CHANGED)
    assert note >= len(second) and "changed" in json.dumps(third[note])
    assert _holding(third, RULE) == [1]
    assert any("changed" in e["message"] for e in again.of("notice") if e.get("kind") == "instructions")


async def test_a_change_made_during_a_run_is_an_appended_note(server: LoopbackServer, tmp_path: Path,
                                                              isolated_state: Path) -> None:
    root = write_workspace(tmp_path / "ws", {"AGENTS.md": f"- {RULE}\n"})
    server.queue(Reply(chunks=[turn("chat", call=("call_1", "read_file", {"path": "AGENTS.md"}))]),
                 Reply(chunks=[turn("chat", call=("call_2", "apply_patch", {
                     "path": "AGENTS.md", "old_text": RULE, "new_text": CHANGED}))]),
                 Reply(chunks=[turn("chat", text="done")]))
    run = await run_agent("Change the rules.", root, server.url, "chat")
    assert run.finish["stopReason"] == "final", run.stderr
    first, second, third = (message_list("chat", b) for b in _bodies(server))
    assert extends(first, second) and extends(second, third)
    assert _holding(third, RULE)[0] == 1
    note = _holding(third, CHANGED)[-1]
    assert note == len(third) - 1 and note >= len(second), third
    assert "[note from lsp-agent]" in json.dumps(third[note]) and "changed" in json.dumps(third[note])


async def test_an_oversized_file_is_cut_with_a_marker(server: LoopbackServer, tmp_path: Path,
                                                     isolated_state: Path) -> None:
    big = f"- {RULE}\n" + ("filler line of the project rules\n" * 6_000) + f"- {TAIL}\n"  # ~200 KB
    root = write_workspace(tmp_path / "ws", {"AGENTS.md": big})
    server.queue(Reply(chunks=[turn("chat", text="done")]))
    run = await run_agent("Hi.", root, server.url, "chat")
    assert run.finish["stopReason"] == "final", run.stderr
    [body] = _bodies(server)
    sent = json.dumps(message_list("chat", body)[1], ensure_ascii=False)
    assert RULE in sent and TAIL not in sent
    assert "[… cut by lsp-agent: AGENTS.md has" in sent and "limits.instructions_bytes" in sent
    assert len(sent.encode()) < 40 * 1024
    [notice] = [e for e in run.of("notice") if e.get("kind") == "instructions"]
    assert "cut" in notice["message"]
