"""Measuring prefix stability: how much of a request repeats the previous one byte for byte."""

from __future__ import annotations

import hashlib


def common_prefix_len(a: bytes, b: bytes) -> int:
    """Length of the common prefix, by bisection over the still-unknown range only: each probe
    `b.startswith(view[lo:mid], lo)` compares the bytes after the known common prefix with memcmp
    and copies nothing, so the whole search reads each byte about once (not once per probe)."""
    lo, hi = 0, min(len(a), len(b))
    view = memoryview(a)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if b.startswith(view[lo:mid], lo):
            lo = mid
        else:
            hi = mid - 1
    return lo


def prefix_share(previous: bytes, current: bytes, common: int | None = None) -> float:
    """Share of `current` that equals the start of `previous` (1.0 for the first request); `common`:
    their common prefix length when the caller has it."""
    if not previous or not current:
        return 1.0 if not previous else 0.0
    return (common_prefix_len(previous, current) if common is None else common) / len(current)


class RequestBytes:
    """The previous request body of a session, and each new body's prefix share and sha256 — costing
    the bytes that are new, not the whole body: requests extend each other (prefix-stable), so the
    hash state over their common prefix is kept and only the rest is hashed (a 300 KB body hashed in
    full every step was a cost that grew with the history)."""

    def __init__(self) -> None:
        self.last: bytes = b""
        self._state = hashlib.sha256()
        #: how many leading bytes of `last` (and so of the next body, when it extends it) `_state` covers
        self._hashed = 0

    def add(self, body: bytes) -> tuple[float, str]:
        """(share of `body` repeating the previous body, sha256 hex of `body`); `body` becomes the previous."""
        common = common_prefix_len(self.last, body) if self.last else 0
        share = prefix_share(self.last, body, common)
        if common < self._hashed:  # diverged before the hashed point (compaction): start over
            self._state, self._hashed = hashlib.sha256(), 0
        view = memoryview(body)
        self._state.update(view[self._hashed:common])
        self._hashed = common
        whole = self._state.copy()
        whole.update(view[common:])
        self.last = body
        return share, whole.hexdigest()
