"""Shared test setup: every test gets its own state and config directories."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("LSP_AGENT_STATE_DIR", str(state))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    yield state
