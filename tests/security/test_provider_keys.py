"""A key the editor hands over (agent/providerKey) is used and never kept: the attack is a canary key
looked for, after a whole run, in every place the server writes or says anything — the state
directory, the workspace, the server's log at DEBUG, LSP traces and messages, the events, the model
requests' bodies — and in what a command the model runs can see of its environment."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import TIMEOUT, Editor, full_capabilities, make_client
from tests.providers.loopback import LoopbackServer, Reply, chat_sse, json_reply
from tests.security.conftest import needs_bwrap

CANARY_KEY = "sk-canary-7f3a9c1e5b2d"
PEEK = "import os; print(sorted(os.environ.items()))"


def _tool_call_reply(name: str, arguments: dict[str, Any]) -> Reply:
    call = {"index": 0, "id": "call-1", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}
    return Reply(chunks=[chat_sse([{"choices": [{"index": 0, "delta": {"tool_calls": [call]},
                                                 "finish_reason": "tool_calls"}]}])])


def _text_reply(text: str) -> Reply:
    return Reply(chunks=[chat_sse([{"choices": [{"index": 0, "delta": {"content": text},
                                                 "finish_reason": "stop"}]}])])


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]


@needs_bwrap
async def test_a_canary_key_is_used_and_never_written_logged_or_shown_to_commands(
        tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LSP_AGENT_API_KEY", raising=False)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    log = tmp_path / "server.log"
    model = LoopbackServer()
    await model.start()
    model.routes["/v1/models"] = json_reply(200, {"data": [{"id": "m"}]})
    model.queue(_tool_call_reply("run_command", {"command": f"python3 -c {shlex.quote(PEEK)}"}),
                _text_reply("done"))

    ref: list[Editor] = []
    client = make_client(ref)
    traces: list[Any] = []
    client.feature("$/logTrace")(lambda ls, params: traces.append(params))
    # the server's whole stderr log at DEBUG, into a file the test reads afterwards
    await client.start_io("/bin/sh", "-c", f'exec "$0" -m lsp_agent --log-level DEBUG serve 2>>{shlex.quote(str(log))}',
                          sys.executable)
    editor = Editor(client, workspace)
    ref.append(editor)
    await asyncio.wait_for(client.initialize_session(types.InitializeParams(
        capabilities=full_capabilities(), root_uri=workspace.as_uri(), trace=types.TraceValue.Verbose,
        initialization_options={"model": "local/m", "providers": {"local": {"baseUrl": model.url}}})), TIMEOUT)
    try:
        client.protocol.notify(types.SET_TRACE, types.SetTraceParams(value=types.TraceValue.Verbose))
        for bad in (CANARY_KEY + "\n", CANARY_KEY + " extra", CANARY_KEY * 400):
            with pytest.raises(JsonRpcException) as refused:
                await editor.request("agent/providerKey", {"provider": "local", "key": bad})
            assert CANARY_KEY not in str(refused.value) and "key" in str(refused.value)
        await editor.request("agent/providerKey", {"provider": "local", "key": CANARY_KEY})
        listed = await editor.request("agent/models", {"provider": "local"})
        assert listed["providers"][0]["key"] == "editor"
        started = await editor.run("look around")
        finish = await editor.finished(started["generation"])
        assert finish["stopReason"] == "final"
        session = await asyncio.wait_for(editor.request("agent/session", {"sessionID": finish["sessionID"]}),
                                         TIMEOUT)
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        await client.stop()
        await model.close()

    # it was handed over: every request to the model's server carried it, as the bearer token only
    assert [r.headers["authorization"] for r in model.requests] == [f"Bearer {CANARY_KEY}"] * 2
    assert model.probes[-1].headers["authorization"] == f"Bearer {CANARY_KEY}"
    (command,) = [e["event"]["part"]["state"] for e in editor.events if e["event"]["type"] == "tool_use"
                  and e["event"]["part"]["state"].get("status") in ("completed", "error")]
    assert "OK: exit=0" in command["output"]

    places: dict[str, bytes] = {"server log": log.read_bytes(), "events": json.dumps(editor.events).encode(),
                                "traces": json.dumps(traces).encode(), "session": json.dumps(session).encode(),
                                "messages": repr([*client.messages, *client.log_messages]).encode(),
                                "command output": command["output"].encode()}
    for n, request in enumerate(model.requests):
        places[f"model request body {n}"] = request.body
    for root in (isolated_state, workspace):
        for path in _files(root):
            places[f"file {path}"] = path.read_bytes()
    assert len(places) > 8 and places["server log"]  # the log was really written (DEBUG)
    leaks = [where for where, data in places.items() if CANARY_KEY.encode() in data]
    assert leaks == []
