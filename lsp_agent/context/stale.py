"""Stale observations: a read of a file that was written afterwards no longer shows it.

Derived from the record's facts alone (tool metadata `read` / `written`, external-change notes).
The mark is an APPENDED note — `[stale: view.py rewritten at step 7; re-read before editing]` —
never an edit of the earlier read, so the cached request prefix stays valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lsp_agent.context.view import STALE
from lsp_agent.domain.history import Message, TextPart, ToolResultPart
from lsp_agent.domain.verification import EXTERNAL_CHANGE

__all__ = ["StaleRead", "StaleScanner", "stale_note", "stale_reads"]


@dataclass(frozen=True)
class StaleRead:
    path: str
    read_step: int | None
    read_part: str
    changed_step: int | None
    #: changed outside the agent (a watcher note), not by one of its own tools
    outside: bool
    #: an appended note already marks this read as stale
    noted: bool


@dataclass
class _Read:
    position: int
    step: int | None
    part: str


class StaleScanner:
    """The facts `stale_reads` derives, gathered incrementally: history is append-only, so each
    call scans only the messages added since the last one (a different or rewritten history is
    scanned again from the start)."""

    def __init__(self) -> None:
        self._reset(None)

    def _reset(self, history: Sequence[Message] | None) -> None:
        self._history = history
        self._seen = 0
        self._last: Message | None = None
        self.reads: dict[str, _Read] = {}
        self.changes: dict[str, tuple[int, int | None, bool]] = {}
        self.noted: set[tuple[str, str]] = set()

    def scan(self, history: Sequence[Message]) -> None:
        if (history is not self._history or len(history) < self._seen
                or (self._seen and history[self._seen - 1] is not self._last)):
            self._reset(history)
        reads, changes, noted = self.reads, self.changes, self.noted
        for position in range(self._seen, len(history)):
            message = history[position]
            for part in message.parts:
                if isinstance(part, ToolResultPart):
                    for path in part.metadata.get("written") or []:
                        changes[str(path)] = (position, message.step, False)
                    if part.ok:
                        for path in part.metadata.get("read") or []:
                            reads[str(path)] = _Read(position, message.step, part.id)
                elif isinstance(part, TextPart) and part.synthetic:
                    for path in part.metadata.get(EXTERNAL_CHANGE) or []:
                        changes[str(path)] = (position, message.step, True)
                        read = reads.get(str(path))
                        if read is not None:
                            noted.add((str(path), read.part))
                    for item in part.metadata.get(STALE) or []:
                        if isinstance(item, dict):
                            noted.add((str(item.get("path")), str(item.get("readPart"))))
        self._seen = len(history)
        self._last = history[-1] if history else None


def stale_reads(history: Sequence[Message], scanner: StaleScanner | None = None) -> list[StaleRead]:
    """Every file whose latest read was followed by a change, with whether a note says so already.
    With a `scanner` kept across calls only the messages added since its last call are scanned."""
    scanner = scanner or StaleScanner()
    scanner.scan(history)
    out: list[StaleRead] = []
    for path, read in sorted(scanner.reads.items()):
        change = scanner.changes.get(path)
        if change is None or change[0] <= read.position:
            continue
        _, step, outside = change
        out.append(StaleRead(path, read.step, read.part, step, outside, (path, read.part) in scanner.noted))
    return out


def stale_note(history: Sequence[Message], scanner: StaleScanner | None = None) -> TextPart | None:
    """The note for reads made stale by the agent's own writes that no note marks yet."""
    fresh = [s for s in stale_reads(history, scanner) if not s.noted and not s.outside]
    if not fresh:
        return None
    lines = []
    for s in fresh:
        when = f"at step {s.changed_step}" if s.changed_step is not None else "since"
        read = f"step {s.read_step}, " if s.read_step is not None else ""
        lines.append(f"[stale: {s.path} rewritten {when}; re-read before editing] Your earlier read of {s.path} "
                     f"({read}part {s.read_part}) no longer shows the file.")
    meta = [{"path": s.path, "readPart": s.read_part, "changedStep": s.changed_step} for s in fresh]
    return TextPart(text="\n".join(lines), synthetic=True, metadata={STALE: meta})
