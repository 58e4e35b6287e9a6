"""Start-up objects are kept out of the cyclic collector's full passes (_startup/memory.py settle_startup):
a full collection mid-run walked every module, class and schema object — an 87 ms pause in the
language server (bench/lsp_latency.py). The headless run and the server both settle at their start."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from lsp_agent._startup import memory
from lsp_agent.app.runtime import HeadlessRun
from tests.helpers import make_env, reply


async def test_a_headless_run_freezes_what_start_up_made(tmp_path: Path) -> None:
    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        result = await HeadlessRun(make_env(tmp_path, [reply(text="done")]), "go").run()
        assert result.stop_reason == "final"
        # Every object alive when the generation began (this whole test process) is frozen.
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()


def test_start_up_is_settled_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second call (another ACP workspace) would freeze the sessions alive then too, and cyclic
    garbage among frozen objects is never collected."""
    calls: list[None] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append(None))
    monkeypatch.setattr(gc, "get_freeze_count", lambda: 0)
    memory.settle_startup()
    assert len(calls) == 1
    monkeypatch.setattr(gc, "get_freeze_count", lambda: 90_000)
    memory.settle_startup()
    assert len(calls) == 1
