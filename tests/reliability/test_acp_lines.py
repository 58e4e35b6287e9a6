"""The ACP front end's line reader holds a bounded amount, whatever the client sends: 400 MB of
junk without a line break is dropped as it arrives (the SDK joined it from pieces, without bound),
refused once, and the next request is answered. Against the real `lsp-agent acp` over a pipe."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from lsp_agent.acp.server import LINE_LIMIT
from tests.e2e.conftest import write_script
from tests.helpers import reply

#: more than the bound below, so a reader that held the junk cannot pass
JUNK_MB = 400
#: what the agent may gain: the line limit (a real line may fill it before it is known to be junk),
#: half as much again for the buffer's growth, and the pieces read (75 MB measured)
BOUND_MB = 1.5 * LINE_LIMIT / 2**20 + 30


def vm(pid: int, field: str) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        line = next(x for x in status if x.startswith(field + ":"))
    return int(line.split()[1]) / 1024


class Acp:
    def __init__(self, tmp_path: Path) -> None:
        script = write_script(tmp_path / "script.json", [reply(text="hi")])
        env = {**os.environ, "LSP_AGENT_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
        self.proc = subprocess.Popen([sys.executable, "-m", "lsp_agent", "acp", "--model", "scripted/test",
                                      "--script", str(script)], cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.inbox.put(json.loads(line))
        self.inbox.put(None)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def initialize(self, msg_id: object) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "initialize",
                              "params": {"protocolVersion": 1, "clientCapabilities": {}}}).encode() + b"\n")

    def answers_until(self, msg_id: object, timeout: float = 120) -> list[dict[str, Any]]:
        """Every answer up to and including the one to `msg_id`."""
        seen = []
        while True:
            item = self.inbox.get(timeout=timeout)
            assert item is not None, "the agent closed its output"
            if "method" not in item:
                seen.append(item)
                if item.get("id") == msg_id:
                    return seen

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def test_junk_without_a_line_break_is_dropped_as_it_arrives_and_the_agent_goes_on(tmp_path: Path) -> None:
    acp = Acp(tmp_path)
    try:
        acp.initialize(1)
        acp.answers_until(1)
        before = vm(acp.proc.pid, "VmRSS")
        junk = b"x" * 2**20
        for _ in range(JUNK_MB):
            acp.send(junk)
        acp.send(b"\n")
        acp.initialize(2)
        answers = acp.answers_until(2)
        peak = vm(acp.proc.pid, "VmHWM")
        print(f"\nACP agent RSS {before:.1f} MB before {JUNK_MB} MB without a line break, peak {peak:.1f} MB "
              f"(line limit {LINE_LIMIT / 2**20:.0f} MiB)")
        assert peak - before < BOUND_MB, (before, peak)
        refused, answered = answers
        assert refused["id"] is None and "longer than" in refused["error"]["message"], refused
        assert "result" in answered
    finally:
        acp.close()


def test_a_request_longer_than_the_limit_is_refused_to_its_id(tmp_path: Path) -> None:
    acp = Acp(tmp_path)
    try:
        big = {"jsonrpc": "2.0", "id": 5, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}, "padding": "x" * (LINE_LIMIT + 10)}}
        acp.send(json.dumps(big).encode() + b"\n")
        acp.initialize(6)
        refused, answered = acp.answers_until(6)
        assert refused["id"] == 5 and refused["error"]["code"] == -32600, refused
        assert f"longer than {LINE_LIMIT} bytes" in refused["error"]["message"]
        assert "result" in answered
    finally:
        acp.close()
