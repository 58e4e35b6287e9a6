"""What the loop asks of the checkpoint store: the workspace recorded around every step that may write.

The store (lsp_agent/checkpoints/) keeps file contents outside the workspace; the core only says when.
`before` runs right before the step's effects, `after` right after, each with what the step already
knows, so that a checkpoint costs little more than the write detection the step does anyway: the
stat snapshot a command's write detection walked, or the paths an edit tool declares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from lsp_agent.core.write_detect import Snapshot


@dataclass(frozen=True)
class StepRef:
    """Which step a checkpoint belongs to."""

    session_id: str
    message_id: str
    step: int
    tool: str


class StepCheckpoints(Protocol):
    async def prepare(self) -> None:
        """Take the workspace's baseline if there is none yet (the first checkpoint reads every file
        once)."""

    def start_baseline(self) -> None:
        """`prepare` in the background, beside a run's first model request, so that wait overlaps it
        (the store holds the task: `close` stops it)."""

    async def close(self) -> None:
        """Stop and await the background work: a baseline cut short leaves no checkpoint (the next
        start takes it again), never a half-recorded one."""

    async def before(self, step: StepRef, paths: list[str] | None, walk: Snapshot | None) -> None:
        """Record the workspace before the step: `walk` when a full stat snapshot was taken (a
        command), else only `paths` (an edit tool's declared files)."""

    async def after(self, step: StepRef, paths: list[str] | None, walk: Snapshot | None,
                    edited: dict[str, str] | None = None) -> None:
        """Record what the step itself changed (the agent's own writes). `edited`: the text the
        step's edits left in each file; an editor may hold it unsaved, so it is kept as the file's
        state at this step, and a later save of exactly that text is the agent's change."""
