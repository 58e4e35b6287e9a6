"""Who reads stdin: the event loop itself for a pipe or socket (what editors give a language server),
a thread for anything it cannot watch (a file, a terminal, a socket that is stdout too).

The loop reader is what keeps `agent/status` fast while a run streams (bench/lsp_latency.py: p99
18-34 ms with the thread, 5-10 ms with the loop, on a 2-CPU machine): a thread has to win the GIL
from the busy loop before it can hand a request over. Latency is measured by the bench; these tests
hold the choice and both readers' delivery.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import socket
import subprocess
import sys
import threading
import tty
from pathlib import Path
from typing import Any, BinaryIO, cast

from pygls.protocol import JsonRPCProtocol

from lsp_agent.server.framing import TransportLimits
from lsp_agent.server.transport import loop_can_read, pump
from tests.reliability.framing_client import SERVER, frame, message


class Recorder:
    """The two methods of pygls' protocol the pump calls, recording what reaches dispatch."""

    def __init__(self) -> None:
        self.handled: list[dict[str, Any]] = []

    def structure_message(self, raw: dict[str, Any]) -> dict[str, Any]:
        return raw

    def handle_message(self, message: dict[str, Any]) -> None:
        self.handled.append(message)


def _pump_threads(stdin: BinaryIO, stdout: BinaryIO, payload: bytes, writer_fd: int | None) -> tuple[list[Any], int]:
    """Pump `stdin` until EOF (feeding `payload` through `writer_fd` if given); what was handled and
    how many lsp-stdin threads ran meanwhile."""
    recorder = Recorder()
    seen = 0

    async def run() -> None:
        nonlocal seen
        task = asyncio.ensure_future(pump(stdin, stdout, cast(JsonRPCProtocol, recorder), threading.Event(),
                                          TransportLimits()))
        await asyncio.sleep(0.05)
        seen = sum(t.name == "lsp-stdin" for t in threading.enumerate())
        if writer_fd is not None:
            os.write(writer_fd, payload)
            for _ in range(500):  # a terminal drops what is unread when its other side closes
                if len(recorder.handled) == payload.count(b"Content-Length"):
                    break
                await asyncio.sleep(0.01)
            os.close(writer_fd)
        await asyncio.wait_for(task, 10)

    switch = sys.getswitchinterval()  # the thread reader lowers it for the process
    try:
        asyncio.run(run())
    finally:
        sys.setswitchinterval(switch)
    return recorder.handled, seen


def _payload(count: int) -> bytes:
    return b"".join(frame(message(id=n, method="agent/status", params={})) for n in range(1, count + 1))


def test_a_pipe_is_read_by_the_loop_without_a_thread(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    out = (tmp_path / "out").open("wb")
    with os.fdopen(read_fd, "rb", buffering=0) as stdin, out:
        assert loop_can_read(stdin, out)
        handled, threads = _pump_threads(stdin, out, _payload(3), write_fd)
    assert threads == 0
    assert [m["id"] for m in handled] == [1, 2, 3]


def test_a_terminal_is_read_by_a_thread(tmp_path: Path) -> None:
    main_fd, terminal_fd = pty.openpty()
    tty.setraw(terminal_fd)
    out = (tmp_path / "out").open("wb")
    with os.fdopen(terminal_fd, "rb", buffering=0) as stdin, out:
        assert not loop_can_read(stdin, out)
        handled, threads = _pump_threads(stdin, out, _payload(2), main_fd)  # closing main_fd: EOF
    assert threads == 1
    assert [m["id"] for m in handled] == [1, 2]


def test_a_file_is_not_watched_by_the_loop(tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.write_bytes(b"")
    with source.open("rb") as stdin, (tmp_path / "out").open("wb") as out:
        assert not loop_can_read(stdin, out)


def test_a_socket_that_is_also_stdout_is_read_by_a_thread() -> None:
    # The loop would make it non-blocking, and pygls' blocking writes to stdout would then fail.
    ours, theirs = socket.socketpair()
    with ours, theirs, ours.makefile("rb", buffering=0) as stdin, ours.makefile("wb", buffering=0) as stdout:
        assert not loop_can_read(cast(BinaryIO, stdin), cast(BinaryIO, stdout))
    left, right = socket.socketpair()
    with left, right, left.makefile("rb", buffering=0) as stdin, open(os.devnull, "wb") as null:
        assert loop_can_read(cast(BinaryIO, stdin), null)


def test_the_server_answers_requests_read_from_a_file(tmp_path: Path) -> None:
    """`lsp-agent serve < requests.json`: the thread reader, end to end with the real server."""
    root = tmp_path / "ws"
    root.mkdir()
    requests = tmp_path / "requests"
    requests.write_bytes(
        frame(message(id=1, method="initialize", params={"processId": None, "rootUri": root.as_uri(),
                                                          "capabilities": {}}))
        + frame(message(method="initialized", params={}))
        + frame(message(id=2, method="agent/status", params={})))  # then EOF: the client is gone
    env = {**os.environ, "LSP_AGENT_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    with requests.open("rb") as stdin:
        done = subprocess.run(SERVER, stdin=stdin, capture_output=True, cwd=root, env=env, timeout=120)
    answered = {m["id"]: m for m in _frames(done.stdout) if "id" in m and "method" not in m}
    assert set(answered) == {1, 2}, done.stderr.decode()[-2000:]
    assert "result" in answered[2]
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def _frames(data: bytes) -> list[dict[str, Any]]:
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length")))
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out
