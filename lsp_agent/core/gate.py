"""Session-scoped reader/writer gate for the calls of one step.

Reads share the lane and overlap; anything else runs alone. Waiters are served
strictly in arrival order, so a read that arrives after a waiting write does
not overtake it (two edits to one file can never race, and a later read sees
the write). A waiter cancelled before it was granted never runs.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Gate:
    def __init__(self) -> None:
        self._readers = 0
        self._writer = False
        self._waiters: deque[tuple[bool, asyncio.Future[None]]] = deque()

    @asynccontextmanager
    async def hold(self, exclusive: bool) -> AsyncIterator[None]:
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((exclusive, granted))
        self._grant()
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release(exclusive)  # granted in the same tick we were cancelled
            else:
                granted.cancel()
                self._grant()
            raise
        try:
            yield
        finally:
            self._release(exclusive)

    def _release(self, exclusive: bool) -> None:
        if exclusive:
            self._writer = False
        else:
            self._readers -= 1
        self._grant()

    def _grant(self) -> None:
        while self._waiters:
            exclusive, fut = self._waiters[0]
            if fut.done():  # cancelled while waiting
                self._waiters.popleft()
                continue
            if self._writer or (exclusive and self._readers):
                return
            self._waiters.popleft()
            if exclusive:
                self._writer = True
                fut.set_result(None)
                return
            self._readers += 1
            fut.set_result(None)
