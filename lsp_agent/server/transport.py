"""The stdio transport: our own reader in front of pygls.

pygls' reader (pygls.io_.run_async) matches only `Content-Length: N\\r\\n` exactly, waits forever
for a body that is shorter than declared, and drops malformed messages unanswered; it cannot be
fixed from outside, so the bytes are read here, framed by server/framing.py, checked by
server/envelope.py, and only well-formed messages reach `protocol.handle_message`. Everything
else (dispatch, responses, the writer) stays pygls'.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import stat
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO, Protocol, cast

import cattrs
from pygls.exceptions import JsonRpcInvalidParams
from pygls.io_ import StdoutWriter
from pygls.protocol import JsonRPCProtocol

from lsp_agent._startup import memory
from lsp_agent.server import envelope
from lsp_agent.server.did_change_fast_path import DID_CHANGE, ChangeTarget, apply, read_did_change
from lsp_agent.server.framing import BadFrame, Frame, FrameDecoder, Start, TransportLimits

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024
#: A frame at least this large is followed by a GC pass (milliseconds; such frames are rare).
LARGE_FRAME = 4 * 1024 * 1024
LARGE_FRAME_GC_AFTER_S = (0.5, 3.0)
_CAMEL = re.compile(r"_([a-z])")
#: Longest run of changes applied on the fast path without a loop turn (seconds): a burst of them
#: is applied in batches, so a running generation's tasks and timers are never held up for long.
FAST_BATCH_S = 0.002


__all__ = ["Pump", "TransportLimits", "feed", "serve_stdio", "serve_tcp"]


class AnsweredEarly(Protocol):
    """The protocol's side of an `initialize` that server/boot.py answered before it existed."""

    def hold_response(self, msg_id: envelope.MsgId) -> None: ...

    def early_failed(self, problem: str) -> None: ...


class Pump:
    """Frames in, messages to pygls, error responses for everything that is not a message."""

    def __init__(self, protocol: JsonRPCProtocol, limits: TransportLimits,
                 decoder: FrameDecoder | None = None) -> None:
        self.protocol = protocol
        self.limits = limits
        self.decoder = decoder if decoder is not None else FrameDecoder(limits.max_body)
        #: where a plain didChange is applied without pygls (None: every message goes through pygls)
        self.changes = protocol if isinstance(protocol, ChangeTarget) else None
        self._batch_started = time.perf_counter()

    async def receive(self, data: bytes) -> None:
        self._batch_started = time.perf_counter()  # the loop has just had its turn (the read)
        self.decoder.push(data)
        while (event := self.decoder.next()) is not None:
            await self.handle(event)

    async def handle(self, event: Frame | BadFrame) -> None:
        """One event of the decoder: a message to dispatch, or an error response."""
        if isinstance(event, Frame) and len(event.body) >= LARGE_FRAME:
            # Refusing a large message (pygls keeps a handler's error in a future that its
            # traceback's frames hold: a cycle reaching the params) would keep it alive until
            # a GC pass; passes shortly after it (an async handler refuses it on its first
            # step, later on a loaded machine) free it, and the pages go back.
            for delay in LARGE_FRAME_GC_AFTER_S:
                asyncio.get_running_loop().call_later(delay, _collect)
        if isinstance(event, BadFrame):
            log.warning("bad frame: %s", event.reason)
            self.reply(envelope.Reject(None, envelope.PARSE_ERROR, f"Parse error: {event.reason}"))
            return
        verdicts = envelope.check_body(event.body)
        if len(verdicts) == 1 and isinstance(verdicts[0], envelope.Reject) \
                and verdicts[0].code == envelope.PARSE_ERROR and self.decoder.reclaim(event.body):
            # The declared length swallowed the start of the next frame: report this one,
            # then read the next frame from where its header begins.
            self.reply(verdicts[0])
            return
        for verdict in verdicts:
            if isinstance(verdict, envelope.Reject):
                log.warning("rejected message: %s", verdict.message)
                self.reply(verdict)
            elif self.applied_directly(verdict.message):
                # Nothing was scheduled, so nothing waits for a turn; but a long burst still
                # gives the loop a turn now and then.
                if time.perf_counter() - self._batch_started >= FAST_BATCH_S:
                    await asyncio.sleep(0)
                    self._batch_started = time.perf_counter()
            else:
                self.dispatch(verdict.message)
                # One message per loop turn, as pygls' reader did: a handler it scheduled
                # (an async notification) starts before the next message is handled.
                await asyncio.sleep(0)
                self._batch_started = time.perf_counter()

    def applied_directly(self, raw: dict[str, Any]) -> bool:
        """A didChange of the plain shape, applied in place, in its turn (server/did_change_fast_path.py)."""
        if self.changes is None or raw.get("method") != DID_CHANGE:
            return False
        did_change = read_did_change(raw)
        return did_change is not None and apply(self.changes, did_change)

    async def stalled(self) -> None:
        bad = self.decoder.stalled()
        log.warning("bad frame: %s", bad.reason)
        self.reply(envelope.Reject(None, envelope.PARSE_ERROR, f"Parse error: {bad.reason}"))
        await self.receive(b"")  # what the stalled frame had swallowed of the next one

    def reply(self, reject: envelope.Reject) -> None:
        self.protocol._send_data(envelope.error_response(reject))

    def replay(self, raw: dict[str, Any]) -> None:
        """The `initialize` server/boot.py already answered: handled as usual (pygls' state, the
        runtime), with its response held back; a failure is reported, as the answer is out."""
        protocol = cast(AnsweredEarly, self.protocol)
        try:
            message = self.protocol.structure_message(raw)
        except Exception as exc:
            problem = "; ".join(_problems(exc.__cause__)) if isinstance(exc, JsonRpcInvalidParams) \
                else type(exc).__name__
            protocol.early_failed(f"the initialize params cannot be read: {problem}")
            return
        protocol.hold_response(raw["id"])
        self.protocol.handle_message(message)

    def dispatch(self, raw: dict[str, Any]) -> None:
        request_id = envelope.usable_id(raw.get("id")) if "method" in raw else None
        method = raw.get("method")
        try:
            message = self.protocol.structure_message(raw)
        except JsonRpcInvalidParams as exc:
            # A standard LSP method whose params lsprotocol cannot structure.
            detail = "; ".join(_problems(exc.__cause__))
            memory.drop_frames(exc)  # cattrs' errors sit in cycles with the frames holding `raw`
            if request_id is not None:
                self.reply(envelope.Reject(request_id, envelope.INVALID_PARAMS,
                                           f"Invalid params for {method}: {detail}"))
            else:
                log.warning("notification %s with invalid params dropped: %s", method, detail)
            return
        except Exception as exc:
            log.exception("cannot read message %s", method)
            memory.drop_frames(exc)
            if request_id is not None:
                self.reply(envelope.Reject(request_id, envelope.INVALID_REQUEST, f"Invalid Request: {method}"))
            return
        if request_id is not None and getattr(self.protocol, "_shutdown", False) and method != "exit":
            # pygls drops requests after shutdown without a word; answer them.
            self.reply(envelope.Reject(request_id, envelope.INVALID_REQUEST,
                                       "Invalid Request: the server is shutting down"))
            return
        self.protocol.handle_message(message)


def _collect() -> None:
    gc.collect()
    memory.release_soon()


def _problems(cause: BaseException | None) -> list[str]:
    """cattrs' account of what did not fit, with the wire's field names (`processId`)."""
    if not isinstance(cause, cattrs.ClassValidationError | cattrs.IterableValidationError):
        return ["wrong shape"]
    out = []
    for line in cattrs.transform_error(cause, path="$")[:5]:
        what, _, where = line.rpartition(" @ ")
        field = _CAMEL.sub(lambda m: m.group(1).upper(), where.removeprefix("$.params").lstrip("."))
        out.append(f"`{field}`: {what}" if field else what)
    return out


#: the interpreter's thread switch interval while the stdin reader thread runs (see `_thread_reader`)
READER_SWITCH_S = 0.0005


def loop_can_read(stdin: BinaryIO, stdout: BinaryIO) -> bool:
    """Whether the event loop can watch stdin itself: a pipe or socket (what editors give a language
    server) that is not also stdout — the loop makes it non-blocking, and a shared one would make
    pygls' blocking writes to stdout fail. Anything else (a file, a terminal; any stdin on Windows,
    whose loop reads only overlapped pipes) is read by a thread."""
    if sys.platform == "win32":
        return False
    try:
        mode = os.fstat(stdin.fileno())
        out = os.fstat(stdout.fileno())
    except (OSError, ValueError):
        return False
    shared = (mode.st_dev, mode.st_ino) == (out.st_dev, out.st_ino)
    return (stat.S_ISFIFO(mode.st_mode) or stat.S_ISSOCK(mode.st_mode)) and not shared


async def _loop_reader(stdin: BinaryIO) -> Callable[[], Awaitable[bytes]]:
    """stdin watched by the loop's own poll: a request is seen at the next loop turn. (A reader
    thread must first win the GIL from a busy loop; while a run streamed, that wait was most of
    agent/status's latency.)"""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_CHUNK, loop=loop)
    pipe = os.fdopen(stdin.fileno(), "rb", buffering=0, closefd=False)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)

    async def read() -> bytes:
        try:
            return await reader.read(_CHUNK)
        except OSError:  # the client is gone: the same as EOF
            return b""
    return read


def _thread_reader(stdin: BinaryIO) -> Callable[[], Awaitable[bytes]]:
    """Blocking reads on a daemon thread, for a stdin the loop cannot watch; b"" is EOF."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    # The thread needs the GIL to hand a request to the loop; while a run keeps the loop busy it
    # waited the whole switch interval (5 ms by default) for it.
    sys.setswitchinterval(READER_SWITCH_S)

    def read_forever(fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, _CHUNK)
            except OSError:
                chunk = b""
            loop.call_soon_threadsafe(queue.put_nowait, chunk)
            if not chunk:
                return

    threading.Thread(target=read_forever, args=(stdin.fileno(),), daemon=True, name="lsp-stdin").start()
    return queue.get


async def feed(read: Callable[[], Awaitable[bytes]], protocol: JsonRPCProtocol, stop: threading.Event,
               limits: TransportLimits, start: Start | None = None) -> None:
    """Chunks from `read` (b"" at EOF) through the decoder, with the stall timeout mid-frame;
    first what server/boot.py read before the server existed (`start`)."""
    handler = Pump(protocol, limits, start.decoder if start is not None else None)
    if start is not None:
        if start.answered is not None:
            handler.replay(start.answered)
        if start.first is not None:
            await handler.handle(start.first)
        await handler.receive(b"")  # what the boot's last read held after that
        if start.stalled:
            await handler.stalled()
    pending: asyncio.Future[bytes] | None = None
    while not stop.is_set():
        pending = pending or asyncio.ensure_future(read())
        timeout = limits.stall_timeout if handler.decoder.mid_frame else None
        done, _ = await asyncio.wait({pending}, timeout=timeout)
        if not done:
            await handler.stalled()  # the read stays pending: its bytes still count
            continue
        chunk, pending = pending.result(), None
        if not chunk:
            return
        await handler.receive(chunk)


async def pump(stdin: BinaryIO, stdout: BinaryIO, protocol: JsonRPCProtocol, stop: threading.Event,
               limits: TransportLimits, start: Start | None = None) -> None:
    read = await _loop_reader(stdin) if loop_can_read(stdin, stdout) else _thread_reader(stdin)
    await feed(read, protocol, stop, limits, start)


def serve_tcp(server: Any, host: str, port: int, limits: TransportLimits) -> None:
    """pygls' `start_tcp` (one client at a time, for debugging), with our reader."""
    server._stop_event = stop = threading.Event()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.protocol.set_writer(writer)
        await feed(lambda: reader.read(_CHUNK), server.protocol, stop, limits)
        server.shutdown()

    async def listen() -> None:
        listener = await asyncio.start_server(connection, host, port)
        log.info("serving on %s:%s", host, port)
        async with listener:
            await listener.serve_forever()

    try:
        asyncio.run(listen())
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()


def serve_stdio(server: Any, stdin: BinaryIO, stdout: BinaryIO, limits: TransportLimits,
                start: Start | None = None) -> None:
    """pygls' `start_io`, with our reader; `start`: what server/boot.py read first."""
    server._stop_event = stop = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        asyncio.run(pump(stdin, stdout, server.protocol, stop, limits, start))
    except BrokenPipeError:
        log.error("the connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
