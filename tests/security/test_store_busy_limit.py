"""The store's busy timeout is how long a write may hold the server's event loop while another process
holds the lock. The attack: a repository's `.lsp-agent/config.toml` raises it (to the 10 s ceiling, or
far past it) so that any process touching the store could freeze the editor's server for that long.
An untrusted repository may only lower a limit: the store the harness opens for it waits the default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lsp_agent.app.runtime import open_environment
from lsp_agent.providers.scripted import Script, ScriptedProvider
from lsp_agent.settings.config import ConfigError, inspect_workspace, load_settings
from lsp_agent.store.db import BUSY_MS
from tests.helpers import reply, trust_workspace


class _Sink:
    def emit(self, event: Any) -> None:
        pass


def _busy_timeout_of(root: Path) -> int:
    settings = load_settings(root, {"model": "scripted/t"})
    env = open_environment(root, settings, ScriptedProvider(Script(label="t", replies=[reply(text="ok")])), _Sink())
    try:
        return int(env.store.db.execute("PRAGMA busy_timeout").fetchone()[0])  # type: ignore[attr-defined]
    finally:
        env.store.close()


def _repo(root: Path, value: int) -> Path:
    (root / ".lsp-agent").mkdir(parents=True)
    (root / ".lsp-agent" / "config.toml").write_text(f"[limits]\nstore_busy_ms = {value}\n", encoding="utf-8")
    return root


def test_an_untrusted_repository_cannot_lengthen_the_store_wait(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws", 10_000)
    assert "limits.store_busy_ms" in {g.setting for g in inspect_workspace(root).gated}  # trust would add it
    assert _busy_timeout_of(root) == BUSY_MS


def test_even_a_trusted_repository_cannot_set_it_past_the_ceiling(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws", 3_600_000)
    trust_workspace(root)
    with pytest.raises(ConfigError, match="store_busy_ms"):
        load_settings(root, {"model": "scripted/t"})
    assert _busy_timeout_of(_repo(tmp_path / "ws2", 10_000)) == BUSY_MS  # untrusted: not even the ceiling


def test_a_repository_may_shorten_it(tmp_path: Path) -> None:
    assert _busy_timeout_of(_repo(tmp_path / "ws", 200)) == 200
