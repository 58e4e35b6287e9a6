"""Progress of a cohort on stderr: a live bar on a terminal, plain lines otherwise (logs, CI).

The bar shows attempts done of planned, each arm's success so far (verified / recorded) and an
ETA from the mean time per finished attempt. Messages (an invalid task, a lost attempt) are printed
above it. Without a terminal every finished attempt is one line, as a log wants.
"""

from __future__ import annotations

import time
from typing import TextIO

from lsp_agent.eval.records import AttemptRecord, Outcome

_BAR = 24


def clock(seconds: float) -> str:
    hours, rest = divmod(max(0, round(seconds)), 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    def __init__(self, err: TextIO, arms: list[str], live: bool) -> None:
        self.err = err
        self.live = live
        self.total = 0
        self.done = 0
        self.arms = {name: [0, 0] for name in arms}  # verified, recorded
        self._started = time.monotonic()
        self._drawn = False

    def begin(self, total: int) -> None:
        self.total = total
        self._started = time.monotonic()
        self._draw()

    def retotal(self, total: int) -> None:
        self.total = total
        self._draw()

    def eta(self) -> str:
        if not self.done:
            return "unknown"
        spent = time.monotonic() - self._started
        return clock(spent / self.done * max(0, self.total - self.done))

    def bar(self) -> str:
        filled = _BAR * self.done // self.total if self.total else _BAR
        arms = " · ".join(f"{name} {v}/{n} verified" for name, (v, n) in self.arms.items())
        return f"[{'#' * filled}{'.' * (_BAR - filled)}] {self.done}/{self.total} · {arms} · ETA {self.eta()}"

    def _clear(self) -> None:
        if self._drawn:
            self.err.write("\r\x1b[K")
            self._drawn = False

    def _draw(self) -> None:
        if self.live and self.total:
            self._clear()
            self.err.write(self.bar())
            self.err.flush()
            self._drawn = True

    def say(self, text: str) -> None:
        self._clear()
        self.err.write(f"eval: {text}\n")
        self.err.flush()
        self._draw()

    def attempt(self, record: AttemptRecord, kept: str | None, reason: str | None = None) -> None:
        """One finished attempt; one that did not verify says why on the same line."""
        self.done += 1
        counts = self.arms.setdefault(record.arm, [0, 0])
        counts[0] += record.outcome is Outcome.VERIFIED
        counts[1] += 1
        why = f" · {reason}" if reason else ""
        if self.live:
            if reason:
                self.say(f"task {record.task} rep {record.repetition} arm {record.arm}: "
                         f"{record.outcome.value}{why}")
            if kept:
                self.say(f"kept {kept}")
            self._draw()
            return
        note = f" · kept {kept}" if kept else ""
        self.say(f"attempt {self.done} of {self.total} · task {record.task} rep {record.repetition} "
                 f"arm {record.arm}: {record.outcome.value} in {record.elapsed_ms / 1000:.1f}s{why} · "
                 f"ETA {self.eta()}{note}")

    def end(self) -> None:
        if self._drawn:
            self.err.write("\n")
            self.err.flush()
            self._drawn = False
