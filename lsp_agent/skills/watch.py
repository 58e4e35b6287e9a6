"""Live refresh of the skills list: watchfiles on `.lsp-agent/skills/`, in a daemon thread.

The folder may not exist yet (no skill promoted so far) or may be removed and recreated, so the
watcher watches the deepest existing level — the workspace root (not recursively), then
`.lsp-agent` (not recursively), then `skills` (recursively) — and moves down or up as folders
appear and vanish. A timeout tick also re-checks the index (a cheap signature), so a change
missed while moving between levels is still noticed. Symlinked folders are not watched.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from watchfiles import watch

from lsp_agent.skills.discovery import SkillIndex, SkillInfo
from lsp_agent.skills.files import SKILLS_PARTS

log = logging.getLogger(__name__)

DEBOUNCE_MS = 200
TICK_MS = 1000


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


class SkillWatcher:
    def __init__(self, index: SkillIndex, on_change: Callable[[list[SkillInfo]], None] | None = None) -> None:
        self.index = index
        self.on_change = on_change
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reported = index.version  # the list as it is when watching starts needs no report

    def target(self) -> tuple[Path, bool]:
        """(folder to watch, recursively?): the deepest real level of .lsp-agent/skills."""
        root = Path(os.path.realpath(self.index.root))
        lsp = root / SKILLS_PARTS[0]
        skills = lsp / SKILLS_PARTS[1]
        if _real_dir(lsp) and _real_dir(skills):
            return skills, True
        if _real_dir(lsp):
            return lsp, False
        return root, False

    def start(self) -> None:
        """Start watching; call from the event loop that should receive `on_change`."""
        if self._thread is None:
            self.index.refresh()
            self._reported = self.index.version
            loop = asyncio.get_running_loop()
            self._thread = threading.Thread(target=self._run, args=(loop,), daemon=True, name="lsp-agent-skills")
            self._thread.start()

    def stop_soon(self) -> None:
        """Ask the thread to end (it notices within a tick); it is a daemon either way."""
        self._stop.set()

    async def stop(self) -> None:
        self._stop.set()
        for _ in range(100):
            if self._thread is None or not self._thread.is_alive():
                break
            await asyncio.sleep(0.02)
        self._thread = None

    def _changed(self, loop: asyncio.AbstractEventLoop) -> None:
        self.index.refresh()
        # By version, not by this refresh's answer: a promotion refreshes the index itself.
        if self.index.version != self._reported and self.on_change is not None:
            self._reported = self.index.version
            try:
                loop.call_soon_threadsafe(self.on_change, self.index.skills())
            except RuntimeError:
                self._stop.set()  # the loop closed: the server is gone

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        while not self._stop.is_set():
            where = self.target()
            self._changed(loop)
            try:
                for _changes in watch(where[0], watch_filter=None, debounce=DEBOUNCE_MS, step=50,
                                      stop_event=self._stop, rust_timeout=TICK_MS, yield_on_timeout=True,
                                      raise_interrupt=False, recursive=where[1], ignore_permission_denied=True):
                    self._changed(loop)
                    if self.target() != where:
                        break  # a level appeared or vanished: watch the new deepest one
            except Exception as exc:  # the folder vanished under the watch, or the platform refused it
                log.info("skills watch of %s ended: %s", where[0], exc)
                self._stop.wait(TICK_MS / 1000)
