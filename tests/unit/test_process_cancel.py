"""A command whose generation was cancelled while the command was being prepared never starts.

Killing a sandbox in the instant after it started can miss the child it was about to tie to its own
life (that child runs in a session of its own, out of reach of the group kill), and the child then
holds the output pipe open: the cancelled run waited for it. Not starting at all closes that window.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from lsp_agent.core.cancel import cancel_signal
from lsp_agent.tools.process import run_process


async def test_a_command_cancelled_before_it_starts_is_never_started(tmp_path: Path) -> None:
    cancel = asyncio.Event()
    cancel.set()
    token = cancel_signal.set(cancel)
    try:
        outcome = await run_process([sys.executable, "-c", "open('started', 'w').write('x')"], tmp_path, 30)
    finally:
        cancel_signal.reset(token)
    assert outcome.cancelled and not outcome.timed_out and outcome.exit_code is None
    assert outcome.output == ""
    assert not (tmp_path / "started").exists()
