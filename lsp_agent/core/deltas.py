"""Coalescing stream deltas: a fast stream becomes a few events, a slow one stays live.

A piece arriving within `window` seconds of the last emitted event waits (a timer bounds the wait
to `window`) and goes out joined with what follows; after a pause it goes out at once. Kinds
(text, reasoning) are never mixed in one event and keep their order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class DeltaCoalescer:
    def __init__(self, emit: Callable[[str, str], None], window: float = 0.02) -> None:
        self._emit = emit
        self.window = window
        self._kind: str | None = None
        self._parts: list[str] = []
        self._last = float("-inf")
        self._timer: asyncio.TimerHandle | None = None

    def add(self, kind: str, text: str) -> None:
        if self._kind is not None and kind != self._kind:
            self.flush()
        self._kind = kind
        self._parts.append(text)
        waited = time.monotonic() - self._last
        if waited >= self.window:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.window - waited, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._parts and self._kind is not None:
            text, self._parts = "".join(self._parts), []
            self._emit(self._kind, text)
            self._last = time.monotonic()
