"""LSP base-protocol framing that cannot be desynchronised: bytes in, whole bodies or bad frames out.

Sans-IO: `FrameDecoder.push(bytes)`, then `next()` for each event the bytes completed; the stdio pump
(server/transport.py) owns reading and timing. Tolerant where the spec leaves room (header names
in any case, LF-only or CR-only line endings, no space after the colon) and strict where a mistake
would lose the stream (LSP has two headers; any other header line is garbage):

- a header block without a usable `Content-Length` (missing, negative, non-numeric) is a bad
  frame, and the decoder resynchronises at the next `Content-Length` header it sees — searched
  from the bad line's second byte, so a header glued to the garbage (`Content-Length: abcContent-
  Length: 5`) is the one read next;
- a declared length above `max_body` is refused at once, and its body is scanned past for the next
  header instead of buffered (memory stays bounded by one header line plus `max_body`);
- a body that is not JSON is searched for a following header, so a length shorter *or* longer
  than its body costs that frame only, not the next one.

- memory is bounded before a frame starts too: blank lines between frames are dropped as they are
  scanned, a header line is at most `MAX_HEADER_LINE` bytes and a header block `MAX_HEADER_BLOCK`
  (one bad frame, then the scan), and the scan keeps only a short tail (`buffered`).

Every skipped span is one bad frame: the scan that follows a bad frame reports nothing more.

Why scanning for the header text is safe: a body is only scanned when it is already garbage;
well-formed frames are always consumed by their declared length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

#: Default bound on one message body (64 MiB): far above any real request (prompts are capped at
#: 200,000 characters, proposals at 1 MB) and small enough that a bogus length cannot exhaust memory.
DEFAULT_MAX_BODY = 64 * 1024 * 1024
#: Default seconds a started frame may wait for its next byte before it is dropped.
DEFAULT_STALL_TIMEOUT = 10.0
#: A header line longer than this is garbage (real ones are under 100 bytes).
MAX_HEADER_LINE = 8 * 1024
#: A header block (since its last `Content-Length`) longer than this is garbage: LSP's two headers
#: take under 200 bytes, and a flood of `Content-Type` lines would otherwise be read line by line.
MAX_HEADER_BLOCK = 16 * 1024

_HEADER_START = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_NAME = b"content-length:"
_KNOWN = (b"content-length", b"content-type")
_DIGITS = re.compile(rb"[0-9]{1,19}")
#: CRLF, LF or a lone CR: some clients end header lines with CR only.
_LINE_END = re.compile(rb"\r\n|\r|\n")
_BLANK = re.compile(rb"[ \t\r\n]+")
#: The header every client writes (one line, CRLF, then the blank line), read in one step.
_PLAIN_HEADER = re.compile(rb"Content-Length: ([0-9]{1,19})\r\n\r\n")


@dataclass(frozen=True)
class Frame:
    body: bytes


@dataclass(frozen=True)
class BadFrame:
    """A frame that could not be read; `reason` is safe to send to the client."""

    reason: str


Event = Frame | BadFrame


class _State(Enum):
    HEADERS = "headers"
    BODY = "body"
    RESYNC = "resync"


class FrameDecoder:
    def __init__(self, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.max_body = max_body
        self._buf = bytearray()
        self._state = _State.HEADERS
        self._length: int | None = None
        self._in_block = False  # at least one header line of the current block was read
        self._block = 0  # bytes of the current block since its last Content-Length
        self.frames = 0  # whole frames decoded
        self.bad = 0  # bad frames reported

    @property
    def mid_frame(self) -> bool:
        """True while a frame has started but is not complete (the stall timeout applies)."""
        return self._state is _State.BODY or self._in_block

    @property
    def buffered(self) -> int:
        """Bytes held: at most one header line, a header block or a body under `max_body`, or the
        scan's short tail — whatever came before."""
        return len(self._buf)

    def push(self, data: bytes) -> None:
        self._buf += data

    def next(self) -> Event | None:
        """The next event the buffered bytes complete, or None until more arrive. One at a time:
        the consumer may `reclaim` a bad body before the bytes after it are read."""
        while True:
            event, progressed = self._step()
            if event is not None:
                return event
            if not progressed:
                return None

    def feed(self, data: bytes) -> list[Event]:
        """Every event `data` completes (for callers that never reclaim)."""
        self.push(data)
        return list(iter(self.next, None))

    def rest(self) -> bytes:
        """The buffered bytes after the last whole frame (between frames only): for a new decoder."""
        assert self._state is _State.HEADERS and not self._in_block
        return bytes(self._buf)

    def stalled(self) -> BadFrame:
        """The peer stopped in the middle of a frame: drop it and look for the next header."""
        if self._state is _State.BODY:
            reason = f"frame body stalled ({len(self._buf)} of {self._length} bytes arrived)"
            # A length longer than its body swallows the next frame's start: keep that.
            partial = bytes(self._buf)
            self._buf.clear()
            self._restart(_State.RESYNC)
            self.reclaim(partial)
        else:
            reason = "frame header stalled"
            self._buf.clear()
            self._restart(_State.RESYNC)
        return self._bad(reason)

    # --- the machine ------------------------------------------------------------------------------

    def _restart(self, state: _State) -> None:
        self._state = state
        self._length = None
        self._in_block = False
        self._block = 0

    def _bad(self, reason: str) -> BadFrame:
        self.bad += 1
        return BadFrame(reason)

    def _step(self) -> tuple[Event | None, bool]:
        if self._state is _State.BODY:
            return self._body()
        if self._state is _State.RESYNC:
            return self._resync()
        if not self._in_block and (plain := _PLAIN_HEADER.match(self._buf)) is not None:
            return self._plain_frame(plain.end(), int(plain.group(1)))
        return self._header_line()

    def _plain_frame(self, header_end: int, length: int) -> tuple[Event | None, bool]:
        """The common header in one step, and its body with it when it is all here: what reading
        the header line by line makes of it, at a fraction of the cost (a burst of small
        notifications is mostly headers)."""
        if length > self.max_body:
            return self._header_line()  # refused there, with the scan that follows
        end = header_end + length
        if len(self._buf) < end:
            del self._buf[:header_end]
            self._length = length
            self._state = _State.BODY
            return None, True
        body = bytes(self._buf[header_end:end])
        del self._buf[:end]
        self.frames += 1
        return Frame(body), True

    def _resync(self) -> tuple[Event | None, bool]:
        match = _HEADER_START.search(self._buf)
        if match is None:
            # Keep a tail that could be the start of a header split across reads.
            del self._buf[:max(0, len(self._buf) - len(b"content-length :"))]
            return None, False
        del self._buf[:match.start()]
        self._restart(_State.HEADERS)
        return None, True

    def _header_line(self) -> tuple[Event | None, bool]:
        if not self._in_block and (blank := _BLANK.match(self._buf)) is not None:
            # Stray blank lines between frames are harmless: dropped in one step, however many.
            del self._buf[:blank.end()]
            return None, True
        # The search stops past the longest line allowed: a long run of junk is not rescanned.
        eol = _LINE_END.search(self._buf, 0, MAX_HEADER_LINE + 2)
        if eol is None or eol.start() > MAX_HEADER_LINE:
            if len(self._buf) <= MAX_HEADER_LINE:
                return None, False
            return self._garbage("header line too long")
        if eol.group() == b"\r" and eol.end() == len(self._buf):
            return None, False  # a CR last: the LF of a CRLF may be in the next read
        line = bytes(self._buf[:eol.start()])
        if not line.strip():
            del self._buf[:eol.end()]
            if self._length is None:
                self._restart(_State.HEADERS)
                return self._bad("header block without Content-Length"), True
            self._state = _State.BODY
            return None, True
        name, colon, value = line.partition(b":")
        name = name.strip().lower()
        if not colon or name not in _KNOWN:
            # LSP has two headers; anything else is garbage, perhaps glued to the next header
            # (`xyzContent-Length: 5`).
            return self._garbage("malformed header line")
        value = value.strip()
        if name == b"content-length":
            if _DIGITS.fullmatch(value) is None:
                # Perhaps the next frame's header is glued to it (`Content-Length: abcContent-Length: 5`,
                # or the line ended by a lone CR): searched from the next byte, it is read next.
                return self._garbage("Content-Length is not a non-negative integer")
            length = int(value)
            if length > self.max_body:
                # Refused before a byte of it is buffered; its body is skipped by scanning.
                del self._buf[:eol.end()]
                self._restart(_State.RESYNC)
                return self._bad(f"declared length {length} exceeds the limit of {self.max_body} bytes"), True
            # A second Content-Length overrides the first (a header whose frame was cut short):
            # the block is counted from here, so a run of them stays small.
            self._length = length
            self._block = 0
        elif _HEADER_START.search(value) is not None:
            return self._garbage("malformed header line")  # Content-Type glued to the next header
        # Content-Type otherwise: the body is UTF-8 JSON whatever it says.
        del self._buf[:eol.end()]
        self._in_block = True
        self._block += eol.end()
        if self._block > MAX_HEADER_BLOCK:
            self._restart(_State.RESYNC)
            return self._bad("header block too long"), True
        return None, True

    def _garbage(self, reason: str) -> tuple[Event | None, bool]:
        """A bad line: reported once, then the next header is searched for from its second byte."""
        del self._buf[:1]
        self._restart(_State.RESYNC)
        return self._bad(reason), True

    def _body(self) -> tuple[Event | None, bool]:
        assert self._length is not None
        if len(self._buf) < self._length:
            return None, False
        body = bytes(self._buf[:self._length])
        del self._buf[:self._length]
        self._restart(_State.HEADERS)
        self.frames += 1
        return Frame(body), True

    def reclaim(self, body: bytes) -> bool:
        """A body that was not JSON: if it holds the start of another frame (its declared length
        was too long and swallowed the next header), read that frame again. True if one was found."""
        match = _HEADER_START.search(body, 1)
        if match is not None:
            start = match.start()
        else:
            # It may have swallowed only the first bytes of that header (`Cont`): keep the longest
            # tail that begins one. Reading a tail that was not a header costs nothing: it is a
            # malformed line, and the scan for the next header starts after its first byte.
            lower = body[-len(_HEADER_NAME):].lower()
            cut = next((n for n in range(len(lower), 0, -1) if _HEADER_NAME.startswith(lower[-n:])), 0)
            if cut == 0 or cut == len(body):
                return False
            start = len(body) - cut
        self._buf[:0] = body[start:]
        self._restart(_State.HEADERS)
        return True


@dataclass(frozen=True)
class TransportLimits:
    """`lsp-agent serve --max-message-bytes/--stall-timeout`."""

    max_body: int = DEFAULT_MAX_BODY
    stall_timeout: float = DEFAULT_STALL_TIMEOUT


@dataclass(frozen=True)
class Start:
    """What the boot read before the server existed, for the normal transport: the decoder itself
    (not the bytes it read, which junk before a frame could make any size)."""

    decoder: FrameDecoder
    #: the first event, read and not handled (None when the client closed first, or it was answered)
    first: Event | None = None
    #: the `initialize` request answered here, for the server to replay silently
    answered: dict[str, Any] | None = None
    #: the first frame stalled: the transport reports it at once
    stalled: bool = False
