"""Fixtures of the security suite: the loopback model, and the skip rule for sandbox tests."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from lsp_agent.sandbox import probe
from tests.providers.loopback import LoopbackServer
from tests.security.kit import Attack, make_attack

_FOUND = probe()
#: tests that need the OS sandbox skip only where bubblewrap cannot run, and say why
needs_bwrap = pytest.mark.skipif(not _FOUND.available, reason=f"needs bubblewrap: {_FOUND.reason}")


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    srv = LoopbackServer()
    await srv.start()
    yield srv
    await srv.close()


@pytest.fixture
def attack(tmp_path: Path, isolated_state: Path) -> Iterator[Attack]:
    made = make_attack(tmp_path, isolated_state)
    yield made
    shutil.rmtree(made.home.parent, ignore_errors=True)
