"""Outside edits for front ends without a watcher (the CLI, ACP, eval attempts).

The language server watches the workspace and records a change made by someone else as a harness
note, which makes a standing check stale. A headless run has no watcher, so without this a user's
editor or a build script rewriting a checked file after the check would leave the run `verified`.
Here the workspace is snapshotted right after a check, and again before the run's verification is
declared: a difference that no recorded write explains came from outside the agent. It uses the
same snapshot and the same Git-ignore filter as the write detection of the agent's own commands, so
what a check's run leaves behind (bytecode, caches, build output) never reads as an outside edit.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsp_agent.core.write_detect import IgnoredPaths, Snapshot, changed, not_ignored, snapshot


class CheckSnapshot:
    """The workspace as the latest check left it, compared again before the result is declared."""

    def __init__(self, root: Path, ignored: IgnoredPaths | None) -> None:
        self.root = root
        self.ignored = ignored
        self._after_check: Snapshot | None = None
        self._taken = False

    async def take(self) -> None:
        """Right after a check ran (its own writes are already in the record)."""
        self._after_check = await asyncio.to_thread(snapshot, self.root)
        self._taken = True

    async def changed_outside(self) -> list[str]:
        """Workspace paths changed since the check and not ignored by Git; [] when no check was taken.
        Off the event loop: the walk of a large tree takes a while."""
        if not self._taken:
            return []
        now = await asyncio.to_thread(snapshot, self.root)
        return await not_ignored(self.root, changed(self._after_check, now), self.ignored)
