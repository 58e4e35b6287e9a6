"""The framing decoder on its own (the real-server fuzz is tests/reliability/test_framing.py):
good frames decode whatever the chunking, and after any garbage the next good frame still does."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_agent.server.framing import BadFrame, Frame, FrameDecoder


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


bodies = st.lists(st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=20), max_size=4),
                  min_size=1, max_size=5).map(lambda items: [json.dumps(i).encode() for i in items])


def chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@settings(max_examples=300, deadline=None)
@given(bodies, st.lists(st.integers(0, 10_000), max_size=20))
def test_good_frames_decode_exactly_however_they_are_split(items: list[bytes], cuts: list[int]) -> None:
    decoder = FrameDecoder()
    events = [e for part in chunks(b"".join(frame(b) for b in items), cuts) for e in decoder.feed(part)]
    assert events == [Frame(b) for b in items]


garbage = st.binary(max_size=200).filter(lambda g: b"content-length" not in g.lower())


@settings(max_examples=500, deadline=None)
@given(garbage, bodies)
def test_after_garbage_the_next_good_frame_is_read(junk: bytes, items: list[bytes]) -> None:
    decoder = FrameDecoder()
    events = decoder.feed(junk)
    # The garbage may still be waiting for more bytes; the good frames resynchronise it.
    events += decoder.feed(b"".join(frame(b) for b in items))
    frames = [e for e in events if isinstance(e, Frame)]
    assert frames[-len(items):] == [Frame(b) for b in items]
    assert all(isinstance(e, BadFrame) for e in events if not isinstance(e, Frame))


def test_a_length_too_long_swallows_the_next_header_which_is_reclaimed() -> None:
    decoder = FrameDecoder()
    first, second = b'{"id": 1}', b'{"id": 2}'
    decoder.push(b"Content-Length: %d\r\n\r\n" % (len(first) + 20) + first + frame(second))
    bad = decoder.next()
    assert isinstance(bad, Frame) and bad.body.startswith(first)
    assert decoder.reclaim(bad.body)
    assert decoder.next() == Frame(second)


def test_the_limit_is_inclusive() -> None:
    decoder = FrameDecoder(max_body=10)
    assert decoder.feed(frame(b"1234567890")) == [Frame(b"1234567890")]
    refused = decoder.feed(b"Content-Length: 11\r\n\r\n")
    assert len(refused) == 1 and isinstance(refused[0], BadFrame) and "exceeds" in refused[0].reason
    assert decoder.feed(b"12345678901" + frame(b"{}")) == [Frame(b"{}")]


def test_a_length_too_long_by_a_few_bytes_reclaims_the_start_of_the_header() -> None:
    second = b'{"id": 2}'
    for extra in range(1, len(b"Content-Length: 9\r\n\r\n") + 1):
        decoder = FrameDecoder()
        first = b'{"id": 1}'
        decoder.push(b"Content-Length: %d\r\n\r\n" % (len(first) + extra) + first + frame(second))
        bad = decoder.next()
        assert isinstance(bad, Frame)
        assert decoder.reclaim(bad.body), extra
        assert decoder.next() == Frame(second), extra
