"""Incremental didChange through the real server: what the agent reads is the editor's text.

Random changes (UTF-16 positions over astral characters, CRLF and LF lines, insertions,
deletions across lines) go to the server as an editor sends them; the editor model applies the
same changes on its own (tests/e2e/conftest.py, `apply_text_edits`), and the agent's read_file
of the buffer must show exactly that text. A flood of changes to a 40,000-line buffer is applied
too, with `agent/status` answered in the middle of it.
"""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Editor, StartEditor, apply_text_edits
from tests.e2e.test_lsp_edits import tool_uses
from tests.helpers import call, reply

PIECES = ["a", "bc", "😀", "é", "\n", "\r\n", "x😀y", "    ", "", "def f():"]
ROW = re.compile(r"^ *(\d+)\t(.*)$")


def units(text: str) -> int:
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in text)


def random_position(rng: random.Random, text: str) -> dict[str, int]:
    """A position an editor could send: a line of the text, a UTF-16 offset inside its content
    that never splits an astral character."""
    lines = text.splitlines() or [""]
    line = rng.randrange(len(lines) + (1 if text.endswith(("\n", "\r")) else 0))
    content = lines[line] if line < len(lines) else ""
    cut = rng.randint(0, len(content))
    return {"line": line, "character": units(content[:cut])}


def random_edit(rng: random.Random, text: str) -> dict[str, Any]:
    a, b = random_position(rng, text), random_position(rng, text)
    start, end = sorted([a, b], key=lambda p: (p["line"], p["character"]))
    new = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 4)))
    return {"range": {"start": start, "end": end}, "newText": new}


def shown(text: str, first: int = 1, last: int | None = None) -> list[str]:
    """The rows read_file shows for these lines of the text (LF-split, a CR before the LF hidden)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [line.removesuffix("\r") for line in lines[first - 1:last]]


def read_rows(editor: Editor, generation: str) -> list[str]:
    (read,) = tool_uses(editor, generation, "read_file")
    output = read["state"]["output"]
    assert read["state"]["status"] == "completed", output
    rows = [ROW.match(line) for line in output.split("\n")[1:]]
    return [row.group(2) for row in rows if row is not None]


async def test_random_incremental_changes_are_what_the_agent_reads(workspace: Path,
                                                                   start_editor: StartEditor) -> None:
    rng = random.Random(36)
    start = "".join(f"line {i} 😀 é{' ' * (i % 3)}" + ("\r\n" if i % 2 else "\n") for i in range(40))
    (workspace / "doc.txt").write_text(start, encoding="utf-8", newline="")
    editor = await start_editor(workspace, [reply(call("read_file", path="doc.txt")), reply(text="done")])
    editor.open("doc.txt", start)
    buf = editor.buffers[editor.uri("doc.txt")]
    for _ in range(400):
        editor._change(buf, [random_edit(rng, buf.text)])

    started = await editor.run("read doc.txt")
    await editor.finished(started["generation"])

    assert read_rows(editor, started["generation"]) == shown(editor.text("doc.txt"))


async def test_a_flood_of_changes_to_a_large_buffer_is_applied_and_status_answered_meanwhile(
        workspace: Path, start_editor: StartEditor) -> None:
    rng = random.Random(7)
    start = "".join(f"    value_{i} = compute({i}, 'some text to make the line longer')\n" for i in range(40_000))
    (workspace / "big.py").write_text(start, encoding="utf-8")
    editor = await start_editor(workspace, [reply(call("read_file", path="big.py", end_line=60)),
                                            reply(text="done")])
    editor.open("big.py", start)
    buf = editor.buffers[editor.uri("big.py")]
    lines = start.splitlines(keepends=True)  # the editor model's text, kept as lines for speed
    status: asyncio.Task[Any] | None = None
    for n in range(3_000):
        line = rng.randrange(50)
        content = lines[line].removesuffix("\n")
        # an editor's position lies inside the line: column 4, or the end of a shorter line
        column = min(4, units(content))
        edit = {"range": {"start": {"line": line, "character": column},
                          "end": {"line": line, "character": column}},
                "newText": rng.choice(["x", "😀", "", "y\n"])}
        changed = apply_text_edits(content, [edit | {"range": {"start": {"line": 0, "character": column},
                                                               "end": {"line": 0, "character": column}}}])
        lines[line:line + 1] = (changed + "\n").splitlines(keepends=True)
        buf.version += 1
        editor.client.text_document_did_change(_params(buf.uri, buf.version, edit))
        if n == 1_500:
            status = asyncio.ensure_future(editor.request("agent/status", {}))
        if n % 200 == 0:
            await asyncio.sleep(0)  # let the client's writer run, as an editor's event loop would
    buf.text = "".join(lines)
    assert status is not None
    assert (await status)["state"] == "idle"

    started = await editor.run("read big.py")
    await editor.finished(started["generation"])

    assert read_rows(editor, started["generation"]) == shown(editor.text("big.py"), 1, 60)


def _params(uri: str, version: int, edit: dict[str, Any]) -> Any:
    from lsprotocol import types

    rng = edit["range"]
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(**rng["start"]), end=types.Position(**rng["end"])),
            text=edit["newText"])])
