"""The SSE decoder: events come out whole however the bytes were split."""

from __future__ import annotations

import pytest

from lsp_agent.providers.sse import SSEDecoder, SSEEvent

BODY = (
    "\ufeff: keep-alive comment\r\n"
    "event: greeting\r\n"
    'data: {"text":"héllo → 世界 🎉"}\r\n'
    "\r\n"
    "data: line one\n"
    "data:line two\n"
    "id: 7\n"
    "\n"
    "data: cr only\r"
    "\r"
    "data: [DONE]\n\n"
).encode()

EXPECTED = [
    SSEEvent(data='{"text":"héllo → 世界 🎉"}', event="greeting"),
    SSEEvent(data="line one\nline two", id="7"),
    SSEEvent(data="cr only", id="7"),
    SSEEvent(data="[DONE]", id="7"),
]


def decode_in_pieces(body: bytes, cuts: list[int]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    start = 0
    for cut in [*cuts, len(body)]:
        events.extend(decoder.feed(body[start:cut]))
        start = cut
    events.extend(decoder.close())
    return events


def test_whole_body_decodes_every_event_kind() -> None:
    assert decode_in_pieces(BODY, []) == EXPECTED


@pytest.mark.parametrize("cut", range(1, len(BODY)))
def test_any_single_split_point_gives_the_same_events(cut: int) -> None:
    # Covers splits mid-line, mid-JSON, between CR and LF, and inside multibyte characters.
    assert decode_in_pieces(BODY, [cut]) == EXPECTED


def test_byte_at_a_time_gives_the_same_events() -> None:
    assert decode_in_pieces(BODY, list(range(1, len(BODY)))) == EXPECTED


def test_event_is_only_emitted_after_its_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a":') == []
    assert decoder.feed(b"1}\n") == []
    assert decoder.feed(b"\n") == [SSEEvent(data='{"a":1}')]


def test_complete_lines_without_a_final_blank_line_are_dispatched_at_close() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: [DONE]\n") == []
    assert decoder.close() == [SSEEvent(data="[DONE]")]


def test_an_unterminated_last_line_is_dropped_at_close() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"cut in the mid') == []
    assert decoder.close() == []


def test_invalid_utf8_raises() -> None:
    with pytest.raises(UnicodeDecodeError):
        SSEDecoder().feed(b"data: \xff\xfe\n\n")


def test_comments_and_blank_lines_are_no_substance_even_split_across_chunks() -> None:
    decoder = SSEDecoder()
    for chunk in [b": pi", b"ng\n\n", b":", b" keep-alive\r\n", b"\r\n", b"\n"]:
        decoder.feed(chunk)
    assert decoder.substance == 0
    decoder.feed(b"da")  # the start of a data line counts at once, before its line ends
    assert decoder.substance == 2
    events = decoder.feed(b"ta: {}\n\n")
    assert [e.data for e in events] == ["{}"]
    assert decoder.substance == len("data: {}")
