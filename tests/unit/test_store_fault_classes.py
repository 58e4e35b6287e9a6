"""What the sqlite store's failures are classified as, in-process: a request's own error (a constraint)
stays what it is; the file's troubles become `StoreUnavailable` with their reason; a damaged file that
another process already moved aside is never moved again (its new store is used)."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.core.storage import StoreReason, StoreUnavailable
from lsp_agent.store import db as store_db
from lsp_agent.store.db import Store
from lsp_agent.store.faults import classify


def test_a_constraint_is_not_a_store_fault(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.db")
    store.create_session("s", "/w", "m")
    with pytest.raises(sqlite3.IntegrityError):
        store.create_session("s", "/w", "m")
    store.close()


@pytest.mark.parametrize(("code", "reason"), [
    (errno.EROFS, StoreReason.READ_ONLY), (errno.ENOSPC, StoreReason.FULL), (errno.ENOENT, StoreReason.MISSING)])
def test_os_errors_by_errno(tmp_path: Path, code: int, reason: StoreReason) -> None:
    fault = classify(OSError(code, "x"), tmp_path / "store.db")
    assert fault is not None and fault.reason is reason and f"({reason.value})" in fault.message


def test_a_deleted_store_refuses_the_write_it_cannot_keep(tmp_path: Path) -> None:
    path = tmp_path / "state" / "store.db"
    store = Store(path)
    store.create_session("s", "/w", "m")
    for name in list(path.parent.iterdir()):
        name.unlink()
    with pytest.raises(StoreUnavailable) as caught:
        store.create_session("t", "/w", "m")
    assert caught.value.reason is StoreReason.MISSING
    assert store.session("s") is not None  # reads go on from the open file
    store.close()


def test_a_damaged_store_another_process_moved_first_is_not_moved_again(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "store.db"
    path.write_bytes(b"not a database " * 100)
    real_open = store_db._open
    calls: list[int] = []

    def racing_open(where: Path, busy_ms: int) -> Any:
        calls.append(1)
        if len(calls) == 1:  # our open finds the damage; meanwhile the other process moves it and starts anew
            try:
                real_open(where, busy_ms)
            except StoreUnavailable:
                where.rename(where.with_name("store.db.corrupt-1"))
                other = Store(where)
                other.create_session("theirs", "/w", "m")
                other.close()
                raise
        return real_open(where, busy_ms)

    monkeypatch.setattr(store_db, "_open", racing_open)
    store = Store(path)
    assert store.moved_aside is None and store.notices == []
    assert store.session("theirs") is not None  # their new store, in place
    assert not path.with_name("store.db.corrupt-2").exists()
    store.close()
