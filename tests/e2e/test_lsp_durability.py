"""Persist before acknowledging, seen from outside the server.

When the server answers `agent/queue/add`, `agent/steer` or `agent/queue/steer`, the editor may show
the text as safe: the server could be killed the next moment. So the row must already be committed
to the store's file by then. These tests open their own sqlite connection on the server's database
and read it as soon as each answer resolves, before awaiting anything else; a write that is still
uncommitted, or not made yet, is invisible to that second connection.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from lsp_agent.settings.paths import workspace_dir
from tests.e2e.conftest import Editor, StartEditor
from tests.e2e.test_lsp_steering import FOREVER_MS
from tests.helpers import reply

QUEUE_CLIENT = "queue_"  # the clientID prefix the server gives corrections made from queue rows


def store_file(root: Path) -> Path:
    """Where the server keeps this workspace's store (the state directory comes from the
    environment the test gave the server, LSP_AGENT_STATE_DIR)."""
    return workspace_dir(root) / "store.db"


@contextmanager
def second_connection(root: Path) -> Iterator[sqlite3.Connection]:
    path = store_file(root)
    assert path.exists(), f"the server's store is not at {path}"
    # A fresh connection in autocommit mode, each time: it sees exactly what has been committed.
    with closing(sqlite3.connect(str(path), isolation_level=None, timeout=10)) as db:
        db.row_factory = sqlite3.Row
        yield db


def queue_row(root: Path, item_id: str) -> dict[str, Any] | None:
    with second_connection(root) as db:
        row = db.execute("SELECT * FROM queue WHERE id=?", (item_id,)).fetchone()
        return dict(row) if row is not None else None


def correction_row(root: Path, session_id: str, client_id: str) -> dict[str, Any] | None:
    with second_connection(root) as db:
        row = db.execute("SELECT * FROM corrections WHERE session_id=? AND client_id=?",
                         (session_id, client_id)).fetchone()
        return dict(row) if row is not None else None


def stored_texts(root: Path, message_id: str) -> list[str]:
    with second_connection(root) as db:
        rows = db.execute("SELECT data FROM parts WHERE message_id=? ORDER BY seq", (message_id,)).fetchall()
    return [json.loads(r["data"]).get("text", "") for r in rows]


async def stop(editor: Editor, session_id: str, generation: str) -> None:
    await editor.request("agent/cancel", {"sessionID": session_id})
    assert (await editor.finished(generation))["stopReason"] == "cancelled"


async def test_a_queued_row_is_committed_when_queue_add_answers(workspace: Path, start_editor: StartEditor) -> None:
    # The first generation waits on the model for the whole test: the rows stay queued, and no
    # later write of the server can commit them by accident before they are checked.
    editor = await start_editor(workspace, [reply(text="slow", delay_ms=FOREVER_MS)])
    started = await editor.run("first")
    sid, gen = started["sessionID"], started["generation"]

    for text in ("second", "third", "fourth"):
        answer = await editor.request("agent/queue/add", {"sessionID": sid, "text": text})
        row = queue_row(workspace, answer["item"]["id"])  # nothing awaited since the answer
        assert row is not None, f"{text!r} was acknowledged but is not in the store"
        assert (row["session_id"], row["text"], row["status"]) == (sid, text, "queued")
    await stop(editor, sid, gen)


async def test_a_row_queued_on_an_idle_session_is_committed_as_sent_with_its_prompt(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="ok"), reply(text="slow", delay_ms=FOREVER_MS)])
    first = await editor.run("first")
    assert (await editor.finished(first["generation"]))["stopReason"] == "final"

    answer = await editor.request("agent/queue/add", {"sessionID": first["sessionID"], "text": "next, please"})
    row = queue_row(workspace, answer["item"]["id"])
    assert answer.get("started"), answer
    assert row is not None and row["status"] == "sent" and row["message_id"], row
    # The row and the prompt it became are one transaction: both are there, or neither.
    assert stored_texts(workspace, row["message_id"]) == ["next, please"]
    await stop(editor, first["sessionID"], answer["started"]["generation"])


async def test_an_accepted_correction_is_written_ahead_when_its_receipt_answers(
        workspace: Path, start_editor: StartEditor) -> None:
    # The step never ends while the test looks, so an accepted correction cannot have been applied
    # (and deleted from the write-ahead table) yet: it must be found there.
    editor = await start_editor(workspace, [reply(text="slow", delay_ms=FOREVER_MS)])
    started = await editor.run("task")
    sid, gen = started["sessionID"], started["generation"]

    for n in range(3):
        client_id = f"c-{n}"
        receipt = await editor.request("agent/steer", {"sessionID": sid, "expectedGeneration": gen,
                                                       "clientID": client_id, "text": f"  correction {n}  "})
        row = correction_row(workspace, sid, client_id)
        assert receipt["status"] == "accepted", receipt
        assert row is not None, f"receipt {client_id} said accepted, but nothing is written ahead"
        assert (row["generation"], row["text"], row["queue_item"]) == (gen, f"correction {n}", None)

    # A rejected correction leaves nothing behind to be surfaced after a restart.
    stale = await editor.request("agent/steer", {"sessionID": sid, "clientID": "late", "text": "x",
                                                 "expectedGeneration": "00000000-0000-0000-0000-000000000000"})
    assert stale["status"] == "rejected" and correction_row(workspace, sid, "late") is None
    await stop(editor, sid, gen)


async def test_a_steered_row_and_its_correction_are_committed_when_queue_steer_answers(
        workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(text="slow", delay_ms=FOREVER_MS)])
    started = await editor.run("task")
    sid, gen = started["sessionID"], started["generation"]
    item = (await editor.request("agent/queue/add", {"sessionID": sid, "text": "use snake_case"}))["item"]

    result = await editor.request("agent/queue/steer", {"taskID": item["id"]})
    row = queue_row(workspace, item["id"])
    correction = correction_row(workspace, sid, f"{QUEUE_CLIENT}{item['id']}")
    assert result["receipt"]["status"] == "accepted", result
    assert row is not None and (row["status"], row["steered_into"]) == ("cancelled", gen), row
    assert correction is not None, "the steered row's correction is not written ahead"
    assert (correction["text"], correction["queue_item"], correction["generation"]) == \
        ("use snake_case", item["id"], gen)
    await stop(editor, sid, gen)
