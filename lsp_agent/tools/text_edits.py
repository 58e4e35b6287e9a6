"""Files as lines and minimal line-range TextEdits: the bridge from matched hunks to an EditPlan.

A file is split into lines and their endings (LSP line breaks only). A change is a list of
Regions (replace lines [start, end) with new lines); `render` turns them into the new text and one
TextEdit per region, keeping the file's line endings and its missing final newline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lsp_agent.domain.edits import LINE_BREAK, Position, TextEdit, utf16_len


def dominant_eol(text: str) -> str:
    """The line ending new lines get: the file's most common one ("\n" on a tie or without any)."""
    if "\r" not in text:
        return "\n"
    crlf = text.count("\r\n")
    counts = {"\n": text.count("\n") - crlf, "\r\n": crlf, "\r": text.count("\r") - crlf}
    best = max(counts.values())
    return "\n" if best == 0 or counts["\n"] == best else ("\r\n" if counts["\r\n"] == best else "\r")


@dataclass(frozen=True)
class FileText:
    lines: list[str]  # without line endings
    eols: list[str]  # each line's ending; only the last may be "" (no final newline)
    eol: str  # the ending new lines get: the file's most common one
    lf_only: bool = False  # every ending is "\n" (but a missing final one)

    @classmethod
    def split(cls, text: str) -> FileText:
        if "\r" not in text:  # the common case: C-level split, no regex
            contents = text.split("\n")
            if contents[-1] == "":
                contents.pop()
                breaks = ["\n"] * len(contents)
            else:
                breaks = ["\n"] * (len(contents) - 1) + [""]
            return cls(contents, breaks, "\n", lf_only=True)
        parts = LINE_BREAK.split(text)
        breaks = LINE_BREAK.findall(text)
        contents = parts
        if contents[-1] == "":
            contents = contents[:-1]
        else:
            breaks = [*breaks, ""]
        return cls(contents, breaks, dominant_eol(text))

    @property
    def missing_final_eol(self) -> bool:
        return bool(self.lines) and self.eols[-1] == ""


def _span(ft: FileText, start: int, end: int) -> int:
    """The length in characters of lines [start, end) with their endings."""
    chars = sum(map(len, ft.lines[start:end]))
    if not ft.lf_only:
        return chars + sum(map(len, ft.eols[start:end]))
    # every ending is one "\n" but a missing final one: no second pass over the endings
    return chars + (end - start) - (start < end == len(ft.lines) and ft.missing_final_eol)


def _without_final_eol(text: str) -> str:
    for ending in ("\r\n", "\n", "\r"):
        if text.endswith(ending):
            return text[:-len(ending)]
    return text


@dataclass(frozen=True)
class Region:
    """Replace file lines [start, end) with `new` (lines without endings)."""

    start: int
    end: int
    new: tuple[str, ...]


def render(ft: FileText, regions: Sequence[Region], keep_missing_eol: bool,
           text: str) -> tuple[str, list[TextEdit]]:
    """The new text and one line-range TextEdit per region; `text` is the file `ft` was split from.

    New lines get the file's line ending. A missing final newline stays missing unless a region
    changes the end of the file; then the file ends with a newline, unless `keep_missing_eol`.
    The new text is computed from the regions' line numbers and the lines' lengths, independently of
    the TextEdits (the caller checks that the edits reproduce it); unchanged runs of lines are
    slices of `text`, so a small change to a large file costs C-level work, not a step per line.
    """
    lines, eol, n = ft.lines, ft.eol, len(ft.lines)
    pieces: list[str] = []
    offset = prev = 0
    for r in regions:
        run = _span(ft, prev, r.start)
        pieces.append(text[offset:offset + run])
        offset += run + _span(ft, r.start, r.end)
        if r.start == n and r.new and ft.missing_final_eol:
            pieces.append(eol)  # lines appended after a last line that had no newline
        pieces.extend(line + eol for line in r.new)
        prev = r.end
    pieces.append(text[offset:])
    new_text = "".join(pieces)
    if keep_missing_eol and ft.missing_final_eol and any(r.end == n for r in regions):
        # the new last line loses its ending (line contents never hold a line break)
        new_text = _without_final_eol(new_text)

    edits: list[TextEdit] = []
    for r in regions:
        chunk = "".join(line + eol for line in r.new)
        start = Position(line=r.start, character=0)
        end = Position(line=r.end, character=0)
        if r.end == n and ft.missing_final_eol:
            end = Position(line=n - 1, character=utf16_len(lines[-1]))
            if r.start == n:  # appending after a last line that has no newline
                start, chunk = end, eol + chunk
            if keep_missing_eol:
                if chunk:
                    chunk = chunk[: -len(eol)]
                elif r.start > 0:  # deleting the tail: the line before loses its newline
                    start = Position(line=r.start - 1, character=utf16_len(lines[r.start - 1]))
        edits.append(TextEdit(start=start, end=end, new_text=chunk))
    return new_text, edits

