"""Open buffers kept as lists of lines, so an incremental didChange costs the lines it touches.

pygls's TextDocument keeps one string: each incremental change splits the whole text into lines,
walks all of them and joins a new string, so a change to a 40,000-line buffer cost 10-24 ms and a
burst of typing froze the server for minutes. Here the lines are the state: a change converts its
positions on the lines of its range, replaces those lines, and the full text is joined only when
something reads it (the agent reading the buffer), once per version.

The result is exactly pygls's, including its handling of odd ranges (past the end, reversed):
the loop below is pygls's, run over the changed lines only. The list always equals
`text.splitlines(True)` of the joined text, which is what pygls's positions are counted on.
"""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace
from pygls.workspace.position_codec import Utf16

__all__ = ["LineDocument", "LineWorkspace"]

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


class LineDocument(TextDocument):
    def __init__(self, uri: str, source: str | None = None, **kwargs: Any) -> None:
        super().__init__(uri, source=source, **kwargs)
        # None until known: a document made without text reads the file on demand, as pygls's does.
        self._line_list: list[str] | None = None if source is None else source.splitlines(True)
        #: the joined text while it matches the lines; None after a change until it is read
        self._joined: str | None = source

    def _current_lines(self) -> list[str]:
        if self._line_list is None:
            text = super().source
            self._line_list, self._joined = text.splitlines(True), text
        return self._line_list

    @property
    def source(self) -> str:
        if self._line_list is None:
            return super().source
        if self._joined is None:
            self._joined = "".join(self._line_list)
        return self._joined

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(self._current_lines())

    @property
    def incremental(self) -> bool:
        """Whether a change with a range is applied as a range (the server's sync kind), as pygls decides."""
        return self._is_sync_kind_incremental

    def _apply_full_change(self, change: types.TextDocumentContentChangeEvent) -> None:
        self.replace_all(change.text)

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        start, end = change.range.start, change.range.end
        self.replace_range(start.line, start.character, end.line, end.character, change.text)

    def replace_all(self, text: str) -> None:
        """A change without a range: the whole text replaced."""
        self._line_list, self._joined = text.splitlines(True), text

    def replace_range(self, start_line: int, start_character: int, end_line: int, end_character: int,
                      text: str) -> None:
        """A change with a range in client units (UTF-16 unless negotiated), applied as pygls applies
        it. Plain integers, so that a caller that read the change itself builds no lsprotocol objects."""
        lines = self._current_lines()
        start_line, start_col = self._server_position(lines, start_line, start_character)
        end_line, end_col = self._server_position(lines, end_line, end_character)
        self._joined = None
        if start_line == len(lines):  # an empty document: pygls appends
            self._line_list = text.splitlines(True)
            return
        first, last = min(start_line, end_line), max(start_line, end_line)
        pieces: list[str] = []
        for i in range(first, last + 1):  # pygls's loop, over the lines the range spans
            line = lines[i]
            if i < start_line or i > end_line:
                pieces.append(line)
                continue
            if i == start_line:
                pieces.append(line[:start_col])
                pieces.append(text)
            if i == end_line:
                pieces.append(line[end_col:])
        # One unchanged neighbour on each side is split again with the new text: a CR left at the
        # end of the change and the LF after it (or the other way round) become one line break,
        # as they would in the joined text.
        before, after = max(first - 1, 0), min(last + 1, len(lines) - 1)
        region = "".join(lines[before:first]) + "".join(pieces) + "".join(lines[last + 1:after + 1])
        lines[before:after + 1] = region.splitlines(True)

    def _server_position(self, lines: list[str], line_no: int, character: int) -> tuple[int, int]:
        """pygls's conversion of a client position to a code-point column, without its walk over
        the line in Python (a tenth of a millisecond per change on a line of code) when the line
        has no character outside the BMP: there a UTF-16 unit is a code point."""
        if lines and line_no < len(lines) and isinstance(self.position_codec.impl, Utf16):
            line = lines[line_no]
            if line.isascii() or _ASTRAL.search(line) is None:
                # As pygls counts: a CRLF is one unit, and a column past the end is the last unit.
                units = len(line) - line.endswith("\r\n")
                if units == 0:
                    return line_no, 0
                return line_no, (units - 1 if character > units else character)
        # A fresh Position: pygls's conversion clamps the one it is given in place.
        converted = self.position_codec.position_from_client_units(
            lines, types.Position(line=line_no, character=character))
        return converted.line, converted.character


class LineWorkspace(Workspace):
    """pygls's Workspace whose text documents are LineDocuments."""

    @classmethod
    def replacing(cls, workspace: Workspace) -> LineWorkspace:
        """The same workspace (root, sync kind, folders, position encoding), before any document opens."""
        return cls(workspace.root_uri, workspace._sync_kind, list(workspace.folders.values()),
                   workspace.position_encoding)

    def _create_text_document(self, doc_uri: str, source: str | None = None, version: int | None = None,
                              language_id: str | None = None) -> TextDocument:
        return LineDocument(doc_uri, source=source, version=version, language_id=language_id,
                            sync_kind=self._sync_kind, position_codec=self._position_codec)
