"""The local store: WAL sqlite outside the workspace, migrations, records written as created."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lsp_agent.domain.history import Message, Role, TextPart
from lsp_agent.settings.paths import state_dir, workspace_dir
from lsp_agent.store.db import Store
from lsp_agent.store.migrations import SCHEMA_VERSION
from tests.helpers import call, reply, run_script


def test_store_lives_in_the_state_dir_keyed_by_workspace(tmp_path: Path, isolated_state: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    assert state_dir() == isolated_state
    assert workspace_dir(one) != workspace_dir(two)
    assert workspace_dir(one).is_relative_to(isolated_state)
    assert not workspace_dir(one).is_relative_to(one)


def test_xdg_state_home_is_the_default_base(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LSP_AGENT_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert state_dir() == tmp_path / "lsp-agent"


def test_wal_mode_and_schema_version(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    raw.close()
    try:
        Store(path)
    except RuntimeError as exc:
        assert "newer" in str(exc)
    else:
        raise AssertionError("a newer schema must not be opened")


def test_messages_round_trip_with_stable_ids(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    store.create_session("ses_1", str(tmp_path), "m")
    message = Message(role=Role.USER, parts=[TextPart(text="hi"), TextPart(text="there", synthetic=True)])
    store.append_message("ses_1", message)
    reopened = Store(tmp_path / "s.db")
    [loaded] = reopened.messages("ses_1")
    assert loaded == message
    found = reopened.part(message.parts[1].id)
    assert found is not None and found[0] == "ses_1" and found[1] == message.id


async def test_the_workspace_stays_clean_and_a_trace_is_written(tmp_path: Path, isolated_state: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    _, session = await run_script(tmp_path, [reply(call("read_file", path="a.txt")), reply(text="done")])
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    traces = list(isolated_state.rglob("traces/*.jsonl"))
    assert len(traces) == 1 and traces[0].name.startswith(session.id)
    records = [json.loads(line) for line in traces[0].read_text().splitlines()]
    call_record = next(r for r in records if r.get("tool") == "read_file")
    assert call_record["args"] == {"path": "a.txt"} and call_record["ok"] is True and "ms" in call_record
    assert call_record["result"].startswith("OK:")
    assert records[-1]["runFinish"]["stopReason"] == "final"
