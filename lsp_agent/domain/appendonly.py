"""Incremental work over append-only lists (the history, the model view).

A step should cost its new messages only. `extends` tells whether a list is the previous one
with items appended: the check is one C-level list comparison that compares unchanged items by
identity (a pointer compare), so it stays cheap at thousands of messages; a compacted or folded
view fails it and the caller starts over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

__all__ = ["extends", "same_objects"]

T = TypeVar("T")


def extends(previous: list[T], current: Sequence[T]) -> bool:
    """`current` starts with every item of `previous`, the very same objects (so only
    `current[len(previous):]` is new)."""
    known = len(previous)
    if len(current) < known:
        return False
    if not known:
        return True
    return current[known - 1] is previous[-1] and current[0] is previous[0] and list(current[:known]) == previous


def same_objects(previous: Sequence[object], current: Sequence[object]) -> bool:
    """The two lists hold the very same objects, in order (a cache keyed on them is still valid)."""
    return len(previous) == len(current) and all(a is b for a, b in zip(previous, current, strict=True))
