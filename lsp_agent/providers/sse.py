"""Incremental Server-Sent Events decoder.

Network chunks split anywhere: mid-line, mid-JSON, even inside a UTF-8
multibyte character. The decoder keeps the undecoded bytes and the unfinished
line between `feed` calls and only emits an event once its terminating blank
line has arrived, so a caller never sees half an event.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent"]

#: A line ends with CRLF, CR or LF (WHATWG).
_LINE_END = re.compile(r"\r\n?|\n")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    """Feed raw body bytes, get complete events (WHATWG event-stream rules)."""

    def __init__(self) -> None:
        # Incremental decoding holds back an incomplete multibyte sequence until its tail arrives.
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self._line = ""
        self._pending_cr = False
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        #: Characters received on lines that are not comments (blank lines aside): what tells a
        #: stream that is producing something from one kept open by keep-alive comments alone.
        self.substance = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode one chunk; raises UnicodeDecodeError on bytes that are not UTF-8."""
        return self._consume(self._utf8.decode(chunk))

    def close(self) -> list[SSEEvent]:
        """End of stream: dispatch an event whose lines are complete but lacks its blank line.

        An unterminated last line is dropped (the stream was cut inside it), as is a
        truncated multibyte character.
        """
        events: list[SSEEvent] = []
        self._utf8.reset()
        if self._pending_cr:
            self._pending_cr = False
            events.extend(self._line_done())
        self._line = ""
        events.extend(self._dispatch())
        return events

    def _consume(self, text: str) -> list[SSEEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            text = text.removeprefix("\ufeff")
        events: list[SSEEvent] = []
        start = 0
        if self._pending_cr:
            # A CR ended the previous chunk; a LF right after it belongs to the same line break.
            self._pending_cr = False
            if text.startswith("\n"):
                start = 1
        # Line ends found by the regex engine, not a Python loop over every character.
        for end in _LINE_END.finditer(text, start):
            self._extend(text[start:end.start()])
            if end.end() == len(text) and end.group() == "\r":
                self._pending_cr = True  # its LF, if any, comes with the next chunk
            events.extend(self._line_done())
            start = end.end()
        self._extend(text[start:])
        return events

    def _extend(self, piece: str) -> None:
        # A line's first character decides whether it is a comment, also for the pieces of it
        # that arrive in later chunks.
        self._line += piece
        if piece and not self._line.startswith(":"):
            self.substance += len(piece)

    def _line_done(self) -> list[SSEEvent]:
        line, self._line = self._line, ""
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return []  # comment / keep-alive
        field, sep, value = line.partition(":")
        if sep:
            value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id" and "\0" not in value:
            self._last_id = value
        return []

    def _dispatch(self) -> list[SSEEvent]:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return []
        return [SSEEvent(data="\n".join(data), event=event or "message", id=self._last_id)]
