"""Measuring prefix stability: how much of a request repeats the previous one byte for byte."""

from __future__ import annotations


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


def prefix_share(previous: bytes, current: bytes) -> float:
    """Share of `current` that equals the start of `previous` (1.0 for the first request)."""
    if not previous or not current:
        return 1.0 if not previous else 0.0
    return common_prefix_len(previous, current) / len(current)
