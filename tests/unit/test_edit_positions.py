"""Positions and TextEdits on large texts are computed without per-line scans, and large texts are
hashed, measured and compared in pieces instead of whole copies (a multi-megabyte copy costs more
in page faults than the work); all of it must still agree with a plain scan of the text, for every
LSP line break and UTF-16 width."""

from __future__ import annotations

import hashlib
import itertools
import random

import pytest

from lsp_agent.domain import edits
from lsp_agent.domain.edits import (
    LINE_BREAK,
    LineIndex,
    Position,
    TextEdit,
    apply_text_edits,
    digest,
    position_after,
    position_at,
    produces,
    utf8_len,
    utf16_len,
)

PIECES = ["a", "bc", "\n", "\r", "\r\n", "é", "😀", "\n\n"]
# what decoding invalid UTF-8 with surrogateescape leaves in a text
UNDECODABLE = "\udcff"


def scan_position(text: str, offset: int) -> Position:
    line = line_start = 0
    for m in LINE_BREAK.finditer(text, 0, offset):
        line, line_start = line + 1, m.end()
    return Position(line=line, character=utf16_len(text[line_start:offset]))


def scan_offset(text: str, pos: Position) -> int:
    starts, ends = [0], []
    for m in LINE_BREAK.finditer(text):
        ends.append(m.start())
        starts.append(m.end())
    ends.append(len(text))
    if pos.line >= len(starts):
        return len(text)
    offset, units = starts[pos.line], 0
    while offset < ends[pos.line] and units < pos.character:
        units += 2 if ord(text[offset]) > 0xFFFF else 1
        offset += 1
    return offset


def test_positions_and_offsets_agree_with_a_scan_of_the_text() -> None:
    rng = random.Random(18)
    for _ in range(1500):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 25)))
        index = LineIndex(text)
        for offset in range(len(text) + 1):
            assert position_at(text, offset) == scan_position(text, offset), (text, offset)
            assert index.position(offset) == scan_position(text, offset), (text, offset)
        for line in range(8):
            for character in range(5):
                pos = Position(line=line, character=character)
                assert index.offset(pos) == scan_offset(text, pos), (text, pos)


def random_edits(rng: random.Random) -> tuple[str, list[TextEdit], str | None]:
    """A text, edits of it, and what a scan says they produce (None when they overlap)."""
    text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 20)))
    edits = []
    for n in range(rng.choice([1, 2, 6])):  # few edits look lines up; many build an index
        a = Position(line=rng.randint(0, 7), character=rng.randint(0, 4))
        b = Position(line=rng.randint(0, 7), character=rng.randint(0, 4))
        a, b = sorted([a, b], key=lambda p: (p.line, p.character))
        edits.append(TextEdit(start=a, end=b, new_text=rng.choice(["", f"<{n}>", "é\n"])))
    spans = sorted((scan_offset(text, e.start), scan_offset(text, e.end), i) for i, e in enumerate(edits))
    if any(b[0] < a[1] for a, b in itertools.pairwise(spans)) or any(s[1] < s[0] for s in spans):
        return text, edits, None
    expected, cursor = [], 0
    for a, b, i in spans:
        expected += [text[cursor:a], edits[i].new_text]
        cursor = b
    return text, edits, "".join([*expected, text[cursor:]])


def test_edits_apply_as_a_scan_says_with_few_edits_and_with_many() -> None:
    rng = random.Random(3)
    for _ in range(3000):
        text, edits, expected = random_edits(rng)
        if expected is None:
            with pytest.raises(ValueError):
                apply_text_edits(text, edits)
        else:
            assert apply_text_edits(text, edits) == expected, (text, edits)


@pytest.mark.parametrize("piece", [1, 2, 3, 1 << 14])
def test_produces_says_whether_the_edits_give_exactly_that_text(monkeypatch: pytest.MonkeyPatch, piece: int) -> None:
    """`produces` compares piece by piece instead of building the result: small pieces make every
    comparison cross piece ends; any one-character change, cut or addition is told apart."""
    monkeypatch.setattr(edits, "PIECE", piece)
    rng = random.Random(piece)
    for _ in range(1500):
        text, changes, expected = random_edits(rng)
        if expected is None:
            with pytest.raises(ValueError):
                produces(text, changes, text)
            continue
        assert produces(text, changes, expected), (text, changes)
        at = rng.randint(0, len(expected))
        for wrong in (expected[:at] + "~" + expected[at:], expected[:at] + expected[at + 1:],
                      expected[:at] + "~" + expected[at + 1:]):
            if wrong != expected:
                assert not produces(text, changes, wrong), (text, changes, wrong)


@pytest.mark.parametrize("piece", [1, 2, 5, 1 << 14])
def test_digest_and_utf8_size_in_pieces_are_those_of_the_whole_encoding(monkeypatch: pytest.MonkeyPatch,
                                                                         piece: int) -> None:
    monkeypatch.setattr(edits, "PIECE", piece)
    rng = random.Random(piece)
    for _ in range(500):
        text = "".join(rng.choice([*PIECES, UNDECODABLE]) for _ in range(rng.randint(0, 30)))
        whole = text.encode("utf-8", "surrogateescape")
        assert digest(text) == hashlib.sha256(whole).hexdigest(), text
        assert utf8_len(text) == len(whole), text


def test_few_edit_lookups_agree_with_a_scan_across_blocks_and_in_any_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_FewLines` counts in blocks from the last line it found: tiny blocks make every lookup cross
    block ends, and lookups go forward, backward and past the last line."""
    rng = random.Random(7)
    lf_only = [p for p in PIECES if "\r" not in p]
    for block in (1, 2, 3, 7):
        monkeypatch.setattr(edits, "LINE_BLOCK", block)
        for _ in range(400):
            text = "".join(rng.choice(lf_only) for _ in range(rng.randint(0, 30)))
            lines = edits._FewLines(text)
            for _ in range(12):
                pos = Position(line=rng.randint(0, 12), character=rng.randint(0, 5))
                assert lines.offset(pos) == scan_offset(text, pos), (block, text, pos)


def test_a_position_after_a_known_one_is_the_position_at_its_offset() -> None:
    rng = random.Random(11)
    for _ in range(800):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 20)))
        at = rng.randint(0, len(text))
        start = position_at(text, at)
        for offset in range(at, len(text) + 1):
            assert position_after(text, start, at, offset) == position_at(text, offset), (text, at, offset)
