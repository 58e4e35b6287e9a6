"""The framing decoder on its own (the real-server fuzz is tests/reliability/test_framing.py):
good frames decode whatever the chunking, and after any garbage the next good frame still does."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_agent.server.framing import MAX_HEADER_BLOCK, MAX_HEADER_LINE, BadFrame, Frame, FrameDecoder


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


# --- resynchronising on a header glued to garbage ----------------------------------------------------

GOOD = b'{"id": 7}'

GLUED = {
    "non-numeric length glued to the next header": b"Content-Length: abc",
    "non-numeric length ended by a lone CR": b"Content-Length: abc\r",
    "a bad frame with CR-only line endings": b"Content-Length: abc\r\r{\"id\": 6}",
    "a length too long to be a number glued to the next header": b"Content-Length: 99999999999999999999",
    "a length with the next header after a space": b"Content-Length: 12 ",
    "Content-Type glued to the next header": b"Content-Type: application/vscode-jsonrpc",
    "a Content-Type line ended by a lone CR, then a bad length": b"Content-Type: x\rContent-Length: -1",
}


def test_a_header_glued_to_a_bad_line_is_read_next_and_the_bad_line_reported_once() -> None:
    for name, junk in GLUED.items():
        for cut in (None, len(junk), len(junk) + 3):  # in one read, or the good frame split off
            data = junk + frame(GOOD)
            decoder = FrameDecoder()
            parts = [data] if cut is None else [data[:cut], data[cut:]]
            events = [e for part in parts for e in decoder.feed(part)]
            assert events[-1] == Frame(GOOD), (name, cut, events)
            assert sum(isinstance(e, BadFrame) for e in events) == 1, (name, cut, events)


def test_cr_only_line_endings_are_read() -> None:
    decoder = FrameDecoder()
    data = b"Content-Length: %d\rContent-Type: application/vscode-jsonrpc\r\r" % len(GOOD) + GOOD
    assert decoder.feed(data) + decoder.feed(frame(b"{}")) == [Frame(GOOD), Frame(b"{}")]


@settings(max_examples=300, deadline=None)
@given(bodies, st.lists(st.integers(0, 10_000), max_size=20), st.sampled_from([b"\r", b"\n", b"\r\n"]))
def test_frames_with_any_line_ending_decode_exactly_however_they_are_split(
        items: list[bytes], cuts: list[int], eol: bytes) -> None:
    decoder = FrameDecoder()
    data = b"".join(b"Content-Length: %d%s%s" % (len(b), eol, eol) + b for b in items)
    events = [e for part in chunks(data, cuts) for e in decoder.feed(part)]
    assert events == [Frame(b) for b in items]


# --- what is buffered before a frame starts -------------------------------------------------------

FLOOD = 16 * 1024 * 1024
CHUNK = 64 * 1024


def flood(line: bytes) -> tuple[list[object], int]:
    """FLOOD bytes of `line` repeated, in reads of CHUNK bytes, then a good frame: the events and
    the most the decoder held between reads."""
    decoder = FrameDecoder(max_body=1024 * 1024)
    piece = (line * (CHUNK // len(line) + 1))[:CHUNK]
    events: list[object] = []
    most = 0
    for _ in range(FLOOD // CHUNK):
        events += decoder.feed(piece)
        most = max(most, decoder.buffered)
    events += decoder.feed(frame(GOOD))
    return events, most


def test_blank_lines_before_a_frame_are_dropped_as_they_are_read() -> None:
    for line in (b"\r\n", b"\n", b" \t\r\n"):
        events, most = flood(line)
        assert events == [Frame(GOOD)]
        assert most <= 1, line


def test_a_flood_of_content_type_lines_is_one_bad_frame_and_bounded() -> None:
    events, most = flood(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n")
    assert events[-1] == Frame(GOOD)
    assert [e for e in events if isinstance(e, BadFrame)] == [BadFrame("header block too long")]
    assert most <= MAX_HEADER_BLOCK + CHUNK


def test_junk_without_a_line_break_is_one_bad_frame_and_bounded() -> None:
    events, most = flood(b"x")
    assert events == [BadFrame("header line too long"), Frame(GOOD)]
    assert most <= MAX_HEADER_LINE + CHUNK


def test_a_header_split_across_reads_survives_the_scan() -> None:
    decoder = FrameDecoder()
    # a line too long: reported, then the scan for the next header starts
    assert decoder.feed(b"\x00" * 20_000) == [BadFrame("header line too long")]
    head = frame(GOOD)
    assert decoder.feed(b"junk" + head[:9]) == []
    assert decoder.buffered <= 32
    assert decoder.feed(head[9:]) == [Frame(GOOD)]
