"""Stable, sortable identifiers for sessions, messages and parts.

IDs are stored records' keys; they never appear in tool output the model sees,
so their time component does not hurt request prefix stability.
"""

from __future__ import annotations

import itertools
import os
import time

_counter = itertools.count()
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


#: every two-digit base-36 string, by value: half the divisions of a digit-by-digit conversion
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]


def _base36(value: int, width: int) -> str:
    """`value` in `width` base-36 digits (the high digits wrap, as a fixed-width counter does)."""
    digits = []
    for _ in range(width // 2):
        value, rem = divmod(value, 1296)
        digits.append(_PAIRS[rem])
    if width % 2:
        digits.append(_ALPHABET[value % 36])
    return "".join(reversed(digits))


def new_id(prefix: str) -> str:
    """`prefix_` + time (ms) + a process counter + random: sorts by creation order."""
    millis = time.time_ns() // 1_000_000
    seq = next(_counter) % (36**4)
    rand = int.from_bytes(os.urandom(5), "big")
    return f"{prefix}_{_base36(millis, 9)}{_base36(seq, 4)}{_base36(rand, 8)}"


def session_id() -> str:
    return new_id("ses")


def message_id() -> str:
    return new_id("msg")


def part_id() -> str:
    return new_id("prt")
