"""`lsp-agent serve` on stdio: answer `initialize` before the server is imported.

Importing the server takes about 1.5 s, 40 % of it lsprotocol's attrs classes (pygls needs them
all), so waiting for it cannot answer `initialize` within 300 ms of process start. Instead, while
a thread imports the server, this module — standard library, framing and envelope only — reads
the first frame and, if it is a well-formed `initialize`, answers it from `initialize_result.json`:
the capabilities pygls computes for our routes, which depend on nothing the client sends (a unit
test rebuilds them with pygls and compares). The server then gets that same message replayed with
its answer held back (server/transport.py `Pump.replay`), so pygls' state and the runtime are
built as before, and every byte after the frame goes to the normal transport: messages the client
sends meanwhile wait in the pipe and are served, in order, once the runtime exists.

Anything else first — another method, a bad frame, params pygls might refuse, a stall — is left
to the normal path untouched: the decoder is handed over with the event it read, so what came
before a frame (junk, however much) was dropped as it was scanned and is never held.
"""

from __future__ import annotations

import json
import os
import select
import sys
import threading
from typing import Any, BinaryIO

from lsp_agent.server import envelope
from lsp_agent.server.framing import BadFrame, FrameDecoder, Start, TransportLimits

_CHUNK = 64 * 1024
RESULT_FILE = os.path.join(os.path.dirname(__file__), "initialize_result.json")
_TRACE = ("off", "messages", "verbose")


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _is_int32(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and envelope.INT32_MIN <= value <= envelope.INT32_MAX


def _optional(params: dict[str, Any], key: str, ok: Any) -> bool:
    return key not in params or params[key] is None or bool(ok(params[key]))


def answerable(params: object) -> bool:
    """True only for params pygls surely accepts (stricter than its structuring: anything in doubt
    goes the normal way, where a bad field gets its InvalidParams). `capabilities` is checked as an
    object only; its inside is checked when the server replays the request."""
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return False
    if "processId" not in params or not (params["processId"] is None or _is_int32(params["processId"])):
        return False
    folders = params.get("workspaceFolders")
    return (_optional(params, "rootUri", _is_str) and _optional(params, "rootPath", _is_str)
            and _optional(params, "locale", _is_str)
            and _optional(params, "trace", lambda t: t in _TRACE)
            and _optional(params, "workDoneToken", lambda t: _is_str(t) or _is_int32(t))
            and _optional(params, "clientInfo", lambda c: isinstance(c, dict) and _is_str(c.get("name"))
                          and _optional(c, "version", _is_str))
            and (folders is None or (isinstance(folders, list) and all(
                isinstance(f, dict) and _is_str(f.get("uri")) and _is_str(f.get("name")) for f in folders))))


def early_initialize(body: bytes) -> dict[str, Any] | None:
    """The message if `body` is an `initialize` request this module may answer."""
    verdicts = envelope.check_body(body)
    if len(verdicts) != 1 or not isinstance(verdicts[0], envelope.Accept):
        return None
    message = verdicts[0].message
    if message.get("method") != "initialize" or envelope.usable_id(message.get("id")) is None:
        return None
    return message if answerable(message.get("params")) else None


def response_frame(message: dict[str, Any], result: dict[str, Any]) -> bytes:
    """The answer, framed as pygls frames it."""
    body = json.dumps({"id": message["id"], "jsonrpc": "2.0", "result": result})
    return (f"Content-Length: {len(body)}\r\n"
            "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + body).encode("utf-8")


def read_start(fd: int, out: BinaryIO, limits: TransportLimits) -> Start:
    """Read up to the first frame; answer it if it is an `initialize` this module can answer."""
    decoder = FrameDecoder(limits.max_body)
    while True:
        timeout = limits.stall_timeout if decoder.mid_frame else None
        if not select.select([fd], [], [], timeout)[0]:
            return Start(decoder, stalled=True)
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            return Start(decoder)
        decoder.push(chunk)
        event = decoder.next()
        if event is None:
            continue
        message = None if isinstance(event, BadFrame) else early_initialize(event.body)
        if message is None:
            return Start(decoder, first=event)
        with open(RESULT_FILE, encoding="utf-8") as file:
            result = json.load(file)
        out.write(response_frame(message, result))
        out.flush()
        return Start(decoder, answered=message)


class _Import(threading.Thread):
    """Imports the server while the main thread waits for the client."""

    def __init__(self) -> None:
        super().__init__(name="lsp-agent-import", daemon=True)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            import lsp_agent.server.app  # noqa: F401  (the server, its handlers and the core)
            from lsp_agent.server.app import import_handlers

            import_handlers()
        except BaseException as exc:  # re-raised in the main thread
            self.error = exc


def serve(tcp: str | None = None, limits: TransportLimits | None = None) -> int:
    limits = limits or TransportLimits()
    if tcp or os.name != "posix":  # select() on a pipe is POSIX; TCP is for debugging
        from lsp_agent.server.app import serve as serve_now

        return serve_now(tcp=tcp, limits=limits)
    # The protocol keeps the real stdout; fd 1 then points at stderr, so a stray print or a child
    # process that inherits stdout can never corrupt the stream.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    importer = _Import()
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)  # the import holds the GIL: let the answer through quickly
    importer.start()
    try:
        start = read_start(sys.stdin.fileno(), protocol_out, limits)
    finally:
        importer.join()
        sys.setswitchinterval(switch)
    if importer.error is not None:
        raise importer.error
    from lsp_agent.server.app import create_server
    from lsp_agent.server.transport import serve_stdio

    serve_stdio(create_server(), sys.stdin.buffer, protocol_out, limits, start)
    return 0
