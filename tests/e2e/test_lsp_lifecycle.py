"""Starting and stopping: stdio and TCP, and a client that vanishes without saying goodbye."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.e2e.conftest import SERVER, TIMEOUT, raw_converter
from tests.reliability.framing_client import RawServer, frame, message


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
        # The port opens once the server has imported and bound, which on a loaded machine takes many
        # seconds: retry the connection until then, or until the server has exited.
        deadline = time.monotonic() + 2 * TIMEOUT
        while True:
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=workspace.as_uri())), TIMEOUT)
        status = await asyncio.wait_for(client.protocol.send_request_async("agent/status", None), TIMEOUT)
        assert status["state"] == "idle" and status["verification"] == "not_run"
        await asyncio.wait_for(client.shutdown_async(None), TIMEOUT)
        client.exit(None)
        assert proc.wait(timeout=TIMEOUT) == 0
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
    assert proc.wait(timeout=TIMEOUT) is not None
    assert time.monotonic() - began < TIMEOUT


# --- the early `initialize` answer (server/boot.py) ----------------------------------------------


def init_params(root: Path, capabilities: Any = None) -> dict[str, Any]:
    return {"processId": None, "rootUri": root.as_uri(), "capabilities": capabilities or {}}


def test_initialize_is_answered_early_with_what_pygls_answers_and_early_requests_wait(workspace: Path,
                                                                                    tmp_path: Path) -> None:
    other = tmp_path / "other"  # its own workspace and store: the two start at the same time
    (other / "ws").mkdir(parents=True)
    early = RawServer(workspace)
    late = RawServer(other / "ws", env={**os.environ, "LSP_AGENT_STATE_DIR": str(other / "state")})
    try:
        # initialize, initialized and a request in one write: the request waits for the runtime
        early.send(frame(message(id="init", method="initialize", params=init_params(workspace)))
                   + frame(message(method="initialized", params={}))
                   + frame(message(id="status", method="agent/status", params={})))
        # a notification first: the boot leaves the stream to pygls, which answers initialize itself
        late.send(frame(message(method="$/setTrace", params={"value": "off"})))
        assert early.response("init", TIMEOUT)["result"] == late.request("initialize", init_params(other / "ws"),
                                                                     TIMEOUT)["result"]
        status = early.response("status", TIMEOUT)
        assert status.get("result", {}).get("state") == "idle", status
        again = early.request("initialize", init_params(workspace), TIMEOUT)
        assert again["error"]["code"] == -32600 and "already initialized" in again["error"]["message"]
        assert len(early.responses_to("init")) == 1  # the replayed initialize's own answer is held back
    finally:
        early.close()
        late.close()


def test_a_runtime_that_cannot_be_built_after_the_early_answer_is_reported(workspace: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("x", encoding="utf-8")
    server = RawServer(workspace, env={**os.environ, "LSP_AGENT_STATE_DIR": str(blocked)})
    try:
        assert "capabilities" in server.request("initialize", init_params(workspace), TIMEOUT)["result"]
        shown = server.until(lambda m: m.get("method") == "window/showMessage", TIMEOUT)["params"]
        assert shown["type"] == 1 and shown["message"].startswith("lsp-agent could not start:")
        # the store's classified error: its path, the reason and the OS's own words
        assert "session store" in shown["message"] and "unavailable (missing)" in shown["message"], shown
        assert "Not a directory" in shown["message"] or "File exists" in shown["message"], shown
        status = server.request("agent/status", {}, TIMEOUT)
        assert status["error"]["code"] == -32010 and status["error"]["data"]["kind"] == "store_unavailable"
        assert "unavailable (missing)" in status["error"]["message"], status
        again = server.request("initialize", init_params(workspace), TIMEOUT)
        assert again["error"]["code"] == -32600  # the client was told it is initialized: it stays so
    finally:
        server.close()


def test_capabilities_pygls_cannot_read_after_the_early_answer_are_reported(workspace: Path) -> None:
    server = RawServer(workspace)
    try:
        bad = init_params(workspace, {"general": {"positionEncodings": 5}})
        assert "capabilities" in server.request("initialize", bad, TIMEOUT)["result"]
        shown = server.until(lambda m: m.get("method") == "window/showMessage", TIMEOUT)["params"]
        assert "the initialize params cannot be read" in shown["message"], shown
        assert "positionEncodings" in shown["message"], shown
        assert server.request("agent/status", {}, TIMEOUT)["error"]["code"] == -32010
    finally:
        server.close()
