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


def _base36(value: int, width: int) -> str:
    digits = []
    for _ in range(width):
        value, rem = divmod(value, 36)
        digits.append(_ALPHABET[rem])
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
