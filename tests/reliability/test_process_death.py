"""A tool process started without the sandbox dies with the harness, even by kill -9.

Under bwrap, `--die-with-parent` and the PID namespace do this (tests/reliability/test_kill9.py); without
it (no bwrap on the machine, or a run approved unsandboxed) only `run_process`'s preexec prctl does —
the tool runs in its own session, so no signal to the harness's group reaches it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.reliability.test_kill9 import alive, gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

#: the harness: runs one long tool through run_process, unsandboxed, and says when it is running
HARNESS = """
import asyncio, sys
from pathlib import Path
from lsp_agent.tools.process import run_process

tool = "import os, time; open('tool.pid', 'w').write(str(os.getpid())); time.sleep(120)"
asyncio.run(run_process([sys.executable, "-c", tool], Path.cwd(), timeout_s=120.0))
"""


async def test_an_unsandboxed_tool_process_dies_when_the_harness_is_killed(tmp_path: Path) -> None:
    harness = await asyncio.create_subprocess_exec(sys.executable, "-c", HARNESS, cwd=tmp_path,
                                                   env={**os.environ, "PYTHONPATH": os.getcwd()})
    pid_file = tmp_path / "tool.pid"
    try:
        async with asyncio.timeout(30):
            while not (pid_file.exists() and pid_file.read_text(encoding="ascii")):
                assert harness.returncode is None, "the harness exited before the tool started"
                await asyncio.sleep(0.02)
        tool = int(pid_file.read_text(encoding="ascii"))
        assert alive(tool)
        harness.kill()
        await harness.wait()
        assert await gone(tool), "the tool process outlived the harness"
    finally:
        if harness.returncode is None:
            harness.kill()
            await harness.wait()
        if pid_file.exists() and pid_file.read_text(encoding="ascii"):
            tool = int(pid_file.read_text(encoding="ascii"))
            if alive(tool):
                os.kill(tool, signal.SIGKILL)
