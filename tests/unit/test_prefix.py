from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lsp_agent.core.prefix import common_prefix_len, prefix_share


@given(st.binary(max_size=200), st.binary(max_size=200), st.binary(max_size=200))
def test_common_prefix_len_matches_a_plain_scan(shared: bytes, a_tail: bytes, b_tail: bytes) -> None:
    a, b = shared + a_tail, shared + b_tail
    expected = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    assert common_prefix_len(a, b) == expected


def test_prefix_share_of_an_extension_and_of_a_rewrite() -> None:
    assert prefix_share(b"", b"abc") == 1.0
    assert prefix_share(b"abcd", b"abcdef") == 4 / 6
    assert prefix_share(b"xbcd", b"abcdef") == 0.0
