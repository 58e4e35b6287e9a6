"""Identifiers: fixed width, sortable by creation, unique."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lsp_agent.domain import ids

_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _digit_by_digit(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        value, rem = divmod(value, 36)
        out.append(_DIGITS[rem])
    return "".join(reversed(out))


@given(st.integers(0, 36**12), st.integers(1, 10))
def test_base36_is_the_fixed_width_digit_string(value: int, width: int) -> None:
    assert ids._base36(value, width) == _digit_by_digit(value, width)


def test_ids_have_one_shape_sort_by_creation_and_do_not_repeat() -> None:
    made = [ids.part_id() for _ in range(2000)]
    assert len(set(made)) == len(made)
    assert all(len(i) == len("prt_") + 21 and i.startswith("prt_") for i in made)
    assert made == sorted(made)  # same millisecond: the counter orders them
