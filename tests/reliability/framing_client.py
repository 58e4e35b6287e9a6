"""A raw stdio client for the real server: writes arbitrary bytes, reads well-formed frames.

No LSP library in between, so a test can send what no library would (broken headers, batches,
null ids) and see exactly what comes back.
"""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

SERVER = [sys.executable, "-m", "lsp_agent", "serve"]


def frame(body: bytes | str) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def message(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


class RawServer:
    def __init__(self, root: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([*SERVER, *args], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.root = root
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.received: list[dict[str, Any]] = []
        self.unclaimed: list[dict[str, Any]] = []  # received, not yet matched by `until`
        self._ids = itertools.count(1)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # --- reading the server's frames (the server writes well-formed ones; a bad one fails the test)

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.inbox.put(None)
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value.strip())
            assert length is not None, "the server sent a header block without Content-Length"
            body = out.read(length)
            self.inbox.put(json.loads(body))

    def next(self, timeout: float) -> dict[str, Any]:
        item = self.inbox.get(timeout=timeout)
        if item is None:
            raise EOFError("the server closed its output")
        self.received.append(item)
        self.unclaimed.append(item)
        if "id" in item and "method" in item:  # a server → client request: answer it
            self.send(frame(message(id=item["id"], result=None)))
        return item

    def until(self, match: Any, timeout: float = 20.0) -> dict[str, Any]:
        """The first message, already received or still to come, that `match`es (claimed once)."""
        for item in self.unclaimed:
            if match(item):
                self.unclaimed.remove(item)
                return item
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no matching message")
            try:
                item = self.next(left)
            except queue.Empty:
                raise TimeoutError("no matching message") from None
            if match(item):
                self.unclaimed.remove(item)
                return item

    # --- writing ------------------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def new_id(self) -> int:
        return next(self._ids)

    def request(self, method: str, params: Any = None, timeout: float = 20.0) -> dict[str, Any]:
        msg_id = self.new_id()
        self.send(frame(message(id=msg_id, method=method, params=params)))
        return self.response(msg_id, timeout)

    def response(self, msg_id: Any, timeout: float = 20.0) -> dict[str, Any]:
        return self.until(lambda m: m.get("id") == msg_id and "method" not in m, timeout)

    def initialize(self) -> dict[str, Any]:
        answer = self.request("initialize", {"processId": None, "rootUri": self.root.as_uri(), "capabilities": {},
                                             })
        self.send(frame(message(method="initialized", params={})))
        return answer

    def responses_to(self, msg_id: Any) -> list[dict[str, Any]]:
        self.barrier()
        return [m for m in self.received if m.get("id") == msg_id and "method" not in m]

    def barrier(self, timeout: float = 30.0) -> None:
        """Wait until everything the bytes sent so far caused has arrived: the server reads and
        answers in order, so a request sent now is answered after all of it (a quiet period is
        slower and proves less)."""
        msg_id = f"barrier-{self.new_id()}"
        self.send(frame(message(id=msg_id, method="agent/status", params={})))
        self.response(msg_id, timeout)

    def drain(self, quiet: float = 0.2) -> None:
        while True:
            try:
                self.next(quiet)
            except queue.Empty:
                return

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.request("shutdown", timeout=10)
                self.send(frame(message(method="exit")))
                self.proc.wait(timeout=10)
        except (OSError, TimeoutError, EOFError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    stream.close()
