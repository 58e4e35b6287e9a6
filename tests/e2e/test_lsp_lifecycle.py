"""Starting and stopping: stdio and TCP, and a client that vanishes without saying goodbye."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.e2e.conftest import SERVER, TIMEOUT, raw_converter


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_tcp_mode_serves_the_same_protocol(workspace: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "lsp_agent", "serve", "--tcp", f"127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        client = LanguageClient(converter_factory=raw_converter)
        for _ in range(100):
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.1)
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=workspace.as_uri())), TIMEOUT)
        status = await asyncio.wait_for(client.protocol.send_request_async("agent/status", None), TIMEOUT)
        assert status["state"] == "idle" and status["verification"] == "not_run"
        await asyncio.wait_for(client.shutdown_async(None), TIMEOUT)
        client.exit(None)
        assert proc.wait(timeout=15) == 0
        await client.stop()
    finally:
        proc.kill()
        proc.wait()


def test_stdio_server_exits_when_the_client_goes_away(workspace: Path) -> None:
    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"capabilities": {}, "rootUri": workspace.as_uri()}}).encode()
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()
    header = proc.stdout.readline()
    assert header.startswith(b"Content-Length:")  # stdout carries only protocol frames
    began = time.monotonic()
    proc.stdin.close()
    assert proc.wait(timeout=15) is not None
    assert time.monotonic() - began < 15
