"""server/boot.py answers `initialize` before pygls is imported: with exactly what pygls would
answer, and only for requests pygls surely accepts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from lsprotocol import types

from lsp_agent.server import boot
from lsp_agent.server.framing import BadFrame, Frame, FrameDecoder
from lsp_agent.server.initialize_result import compute, render
from tests.e2e.conftest import full_capabilities

FIX = "python -m lsp_agent.server.initialize_result"


def stored() -> dict[str, Any]:
    with open(boot.RESULT_FILE, encoding="utf-8") as file:
        result: dict[str, Any] = json.load(file)
    return result


@pytest.mark.parametrize("client", [types.ClientCapabilities(), full_capabilities(),
                                    full_capabilities(apply_edit=False, resource_ops=False, progress=False)],
                         ids=["none", "full", "minimal"])
def test_the_stored_answer_is_what_pygls_computes_for_any_client(client: types.ClientCapabilities) -> None:
    # A route added, removed or given options changes the capabilities: rewrite the file.
    assert render(compute(client)) == render(stored()), f"initialize_result.json is stale: run `{FIX}`"


def test_boot_imports_no_server() -> None:
    probe = ("import sys, lsp_agent.server.boot\n"
             "print(','.join(m for m in ('pygls', 'lsprotocol', 'pydantic', 'asyncio', 'lsp_agent.server.app')"
             " if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == ""


GOOD: dict[str, Any] = {"processId": 12, "rootUri": "file:///w", "capabilities": {"general": {}},
                        "clientInfo": {"name": "ed", "version": "1"}, "trace": "off", "locale": "en",
                        "workspaceFolders": [{"uri": "file:///w", "name": "w"}], "initializationOptions": [1]}


@pytest.mark.parametrize("change", [{}, {"processId": None}, {"rootUri": None}, {"workspaceFolders": None},
                                    {"workDoneToken": "t"}, {"clientInfo": {"name": "ed"}}])
def test_well_formed_params_are_answered(change: dict[str, Any]) -> None:
    assert boot.answerable({**GOOD, **change})


@pytest.mark.parametrize("change", [
    {"processId": "x"}, {"processId": 1.5}, {"processId": True}, {"processId": 2**31}, {"capabilities": None},
    {"capabilities": []}, {"rootUri": 5}, {"rootPath": []}, {"trace": "loud"}, {"locale": 1},
    {"clientInfo": {"version": "1"}}, {"clientInfo": "ed"}, {"workspaceFolders": [{"uri": "file:///w"}]},
    {"workspaceFolders": {}}, {"workDoneToken": 1.5}])
def test_anything_in_doubt_is_left_to_pygls(change: dict[str, Any]) -> None:
    assert not boot.answerable({**GOOD, **change})
    assert not boot.answerable({k: v for k, v in GOOD.items() if k != "processId"})  # required, may be null
    assert not boot.answerable(None)


def frame(payload: object) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_only_a_single_well_formed_initialize_request_is_answered() -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": GOOD}
    assert boot.early_initialize(frame(init).split(b"\r\n\r\n", 1)[1]) == init
    for other in ({**init, "method": "shutdown"}, {**init, "id": None}, {**init, "jsonrpc": "1.0"},
                  {k: v for k, v in init.items() if k != "id"}, [init]):
        assert boot.early_initialize(json.dumps(other).encode()) is None
    assert boot.early_initialize(b"{not json") is None


class Pipe:
    """A real pipe, as stdin is."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()

    def write(self, data: bytes) -> None:
        os.write(self.write_fd, data)

    def close(self) -> None:
        os.close(self.write_fd)
        os.close(self.read_fd)


class Out:
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> int:
        self.data += data
        return len(data)

    def flush(self) -> None:
        pass


def test_the_answer_goes_out_and_the_bytes_after_it_are_handed_on() -> None:
    pipe, out = Pipe(), Out()
    init = {"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": GOOD}
    after = frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}) + b"Content-Len"
    try:
        pipe.write(frame(init)[:10])
        pipe.write(frame(init)[10:] + after)
        start = boot.read_start(pipe.read_fd, out, boot.TransportLimits())  # type: ignore[arg-type]
    finally:
        pipe.close()
    assert (start.answered, start.first, start.stalled) == (init, None, False)
    # the bytes after it wait in the decoder handed on: the next frame and the start of one more
    assert start.decoder.feed(b"") == [Frame(after[:-len(b"Content-Len")].split(b"\r\n\r\n", 1)[1])]
    assert start.decoder.buffered == len(b"Content-Len")
    header, body = out.data.split(b"\r\n\r\n", 1)
    assert header.startswith(b"Content-Length: %d\r\n" % len(body))
    assert json.loads(body) == {"jsonrpc": "2.0", "id": "a", "result": stored()}


@pytest.mark.parametrize("first", [frame({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}),
                                   frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                          "params": {**GOOD, "processId": "x"}}),
                                   b"Content-Length: x\r\n\r\n{}", b""])
def test_anything_else_first_is_handed_on_untouched(first: bytes) -> None:
    pipe, out = Pipe(), Out()
    try:
        pipe.write(first)
        os.close(pipe.write_fd)  # EOF after it
        pipe.write_fd = os.open(os.devnull, os.O_WRONLY)
        start = boot.read_start(pipe.read_fd, out, boot.TransportLimits())  # type: ignore[arg-type]
    finally:
        pipe.close()
    assert out.data == b"" and start.answered is None and not start.stalled
    # the event read is handed on with the decoder, for the transport to handle (or nothing, at EOF)
    assert start.first == (FrameDecoder().feed(first) or [None])[0]
    assert start.decoder.feed(b"") == []


def test_a_stalled_first_frame_is_handed_on_as_stalled() -> None:
    pipe, out = Pipe(), Out()
    try:
        pipe.write(b"Content-Length: 10\r\n\r\n{")
        start = boot.read_start(pipe.read_fd, out, boot.TransportLimits(stall_timeout=0.2))  # type: ignore[arg-type]
    finally:
        pipe.close()
    assert start.stalled and start.first is None and out.data == b""
    assert start.decoder.mid_frame and start.decoder.stalled() == BadFrame("frame body stalled (1 of 10 bytes arrived)")


def test_junk_before_the_first_frame_is_not_held_while_it_is_read() -> None:
    """150 MB of blank or header lines before any frame grew the server by 151 MB: the boot kept
    every byte it read to hand over. Only the decoder's bounded buffer is kept now."""
    import threading
    import tracemalloc

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": GOOD}
    for line in (b"\r\n", b"Content-Type: application/vscode-jsonrpc\r\n", b"x"):
        pipe, out = Pipe(), Out()
        junk = (line * (2**20 // len(line) + 1))[:2**20]

        def write(pipe: Pipe = pipe, junk: bytes = junk) -> None:
            for _ in range(24):  # 24 MiB
                pipe.write(junk)
            pipe.write(frame(init))

        writer = threading.Thread(target=write)
        tracemalloc.start()
        try:
            writer.start()
            start = boot.read_start(pipe.read_fd, out, boot.TransportLimits(max_body=2**20))  # type: ignore[arg-type]
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            # nothing after the junk is lost: what the boot did not read is read as the transport would
            events = [start.first] if start.first is not None else []
            while not (events and events[-1] == Frame(frame(init).split(b"\r\n\r\n", 1)[1])):
                events += start.decoder.feed(b"")
                if start.answered is not None:
                    break
                events += start.decoder.feed(os.read(pipe.read_fd, 1 << 16))
        finally:
            tracemalloc.stop()
            writer.join()
            pipe.close()
        assert peak < 2 * 2**20, (line, peak)  # a read or two, and the decoder's bounded buffer
        if line == b"\r\n":
            assert start.answered == init and events == []  # blank lines between frames are harmless
        else:
            assert [type(e) for e in events] == [BadFrame, Frame], (line, events)  # the junk is reported once
