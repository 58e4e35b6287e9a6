"""A flood of incremental didChange on a 2 MB buffer: the server keeps answering, and a run that
reads the buffer right after the flood sees the editor's final text.

The real server over a pipe, raw frames (tests/reliability/framing_client.py): 10,000 changes to a
40,000-line document written as one burst — one-character insertions all over it and random edits
near its top (several lines at once, CRLF, astral characters that are two UTF-16 units, deletions
across lines, empty text, three changes in one notification) — with `agent/status` in the middle and
at the end, and a document closed and opened again inside the burst. Right behind the last change
comes `agent/run`, whose scripted model reads the buffer. Everything waits on the answer itself,
with a generous bound; how fast the server answers is bench/document_sync.py's business.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.providers.scripted import Script
from tests.helpers import call, reply
from tests.reliability.framing_client import RawServer, frame, message

LINES = 40_000
LINE = "    value = compute(item, 'text that fills a line') \n"  # 52 characters: 2.1 MB in all
CHANGES = 10_000
#: lines at the top where the random edits go (the rest gets one-character insertions)
HEAD = 60
#: pieces of the random edits: line breaks of both kinds, astral and other non-ASCII characters
PIECES = ["a", "bc", "😀", "é", "\n", "\r\n", "x😀y", "    ", "", "def f():"]
#: what any one answer may take on a loaded machine (each takes milliseconds when it is quiet)
BOUND_S = 120.0
ROW = re.compile(r"^ *(\d+)\t(.*)$")


def units(text: str) -> int:
    """Length in UTF-16 code units, LSP's default position encoding."""
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in text)


def content(line: str) -> str:
    return line.removesuffix("\n").removesuffix("\r")


class EditorText:
    """The editor's side of the buffer: the top kept as one string (random edits there), the rest
    as lines (one-character insertions), so 10,000 changes cost the test little."""

    def __init__(self) -> None:
        self.head = LINE * HEAD
        self.rest = [LINE] * (LINES - HEAD)

    def text(self) -> str:
        return self.head + "".join(self.rest)

    def head_lines(self) -> list[str]:
        return self.head.splitlines(keepends=True)

    def random_head_edit(self, rng: random.Random) -> dict[str, Any]:
        """A change inside the top lines (never touching the last of them, so the top keeps ending
        with a line break) at positions an editor could send: never inside a surrogate pair. Most
        stay on one line, some span two or three; the top stays around HEAD lines."""
        lines = self.head_lines()
        first = rng.randrange(len(lines) - 1)
        last = min(first + rng.choice([0, 0, 0, 1, 2]), len(lines) - 2)
        cuts = [rng.randint(0, len(content(lines[first]))), rng.randint(0, len(content(lines[last])))]
        if first == last:
            cuts.sort()
        offsets = [sum(len(x) for x in lines[:line]) + cut for line, cut in zip((first, last), cuts, strict=True)]
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 4)))
        if len(lines) < HEAD:
            text += rng.choice(["\n", "\r\n"])
        self.head = self.head[:offsets[0]] + text + self.head[offsets[1]:]
        start = {"line": first, "character": units(content(lines[first])[:cuts[0]])}
        end = {"line": last, "character": units(content(lines[last])[:cuts[1]])}
        return {"range": {"start": start, "end": end}, "text": text}

    def insertion_below(self, rng: random.Random) -> dict[str, Any]:
        index = rng.randrange(len(self.rest))
        self.rest[index] = self.rest[index][:4] + "x" + self.rest[index][4:]
        line = len(self.head_lines()) + index
        position = {"line": line, "character": 4}
        return {"range": {"start": position, "end": position}, "text": "x"}


def did_change(uri: str, version: int, changes: list[dict[str, Any]]) -> bytes:
    return frame(message(method="textDocument/didChange",
                         params={"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}))


def did_open(uri: str, text: str) -> bytes:
    return frame(message(method="textDocument/didOpen",
                         params={"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}))


def shown(text: str, first: int, last: int) -> list[str]:
    """The rows read_file shows for lines first..last of the text (a CR before the LF hidden)."""
    return [line.removesuffix("\r") for line in text.split("\n")[first - 1:last]]


def read_outputs(server: RawServer, generation: str) -> dict[tuple[int | None, int | None], list[str]]:
    """The rows of each read_file of the run, by the lines it asked for."""
    out = {}
    for item in server.received:
        if item.get("method") != "agent/event" or item["params"].get("generation") != generation:
            continue
        event = item["params"]["event"]
        part = event.get("part", {})
        if event["type"] == "tool_use" and part.get("tool") == "read_file" and part["state"]["status"] == "completed":
            args = part["state"]["input"]
            rows = [ROW.match(line) for line in part["state"]["output"].split("\n")[1:]]
            out[(args.get("start_line"), args.get("end_line"))] = [row.group(2) for row in rows if row is not None]
    return out


@pytest.fixture
def server(tmp_path: Path) -> RawServer:
    root = tmp_path / "ws"
    root.mkdir()
    env = {**os.environ, "LSP_AGENT_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    return RawServer(root, env=env)


def test_a_flood_of_changes_leaves_the_server_answering_and_a_run_reads_the_final_text(
        server: RawServer, tmp_path: Path) -> None:
    root = server.root
    rng = random.Random(36)
    editor = EditorText()
    (root / "big.py").write_text(editor.text(), encoding="utf-8")
    (root / "other.txt").write_text("the disk's text\n", encoding="utf-8")
    big, other = (root / "big.py").as_uri(), (root / "other.txt").as_uri()

    burst = [did_open(big, editor.text())]
    for version in range(2, CHANGES + 2):
        kind = version % 5
        if kind == 0:
            changes = [editor.random_head_edit(rng)]
        elif kind == 1:  # several changes in one notification, each one's positions after the one before
            changes = [editor.random_head_edit(rng), editor.insertion_below(rng), editor.random_head_edit(rng)]
        else:
            changes = [editor.insertion_below(rng)]
        burst.append(did_change(big, version, changes))
        if version == CHANGES // 2:
            burst.append(frame(message(id="status-mid", method="agent/status", params={})))
            # Closed and opened again in the middle of the flood: the change after the second
            # open applies to the second text, not to the first nor to the disk's. That change has
            # a key the fast path does not read, so pygls applies it: the two paths keep one order.
            insert_a = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                        "text": "A"}
            burst += [did_open(other, "first\n"), did_change(other, 2, [insert_a]),
                      frame(message(method="textDocument/didClose", params={"textDocument": {"uri": other}})),
                      did_open(other, "second\n"), did_change(other, 2, [insert_a | {"text": "B", "unread": 1}])]
    final = editor.text()
    head_rows = len(editor.head_lines()) + 2
    far = len(editor.head_lines()) + max(i for i, line in enumerate(editor.rest) if "x" in line) + 1
    script = tmp_path / "script.json"
    script.write_text(Script(label="flood", replies=[
        reply(call("read_file", path="big.py", end_line=head_rows),
              call("read_file", path="big.py", start_line=far - 20, end_line=far),
              call("read_file", path="other.txt")),
        reply(text="done")]).model_dump_json(), encoding="utf-8")
    burst.append(frame(message(id="run", method="agent/run", params={"prompt": "read big.py"})))
    burst.append(frame(message(id="status-end", method="agent/status", params={})))

    try:
        answer = server.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {},
                                               "initializationOptions": {"model": "scripted/test",
                                                                         "script": str(script)}}, timeout=BOUND_S)
        assert "capabilities" in answer["result"]
        server.send(frame(message(method="initialized", params={})))
        server.send(b"".join(burst))  # 2.5 MB as one write: the pipe takes it as fast as the server reads

        assert server.response("status-mid", BOUND_S)["result"]["state"] in ("idle", "running")
        generation = server.response("run", BOUND_S)["result"]["generation"]
        assert "result" in server.response("status-end", BOUND_S)
        finish = server.until(lambda m: m.get("method") == "agent/event"
                              and m["params"]["event"]["type"] == "run_finish", BOUND_S)
        assert finish["params"]["generation"] == generation

        reads = read_outputs(server, generation)
        assert reads[(None, head_rows)] == shown(final, 1, head_rows)
        assert reads[(far - 20, far)] == shown(final, far - 20, far)
        assert reads[(None, None)] == ["Bsecond"]
        assert not [m for m in server.received if m.get("method") == "window/showMessage"
                    and m["params"]["type"] == 1]  # no error reported on the way
    finally:
        server.close()
    assert server.proc.returncode == 0
