"""`agent/models`, `agent/providerKey` and `agent/mode` over stdio, against a real loopback
OpenAI-compatible server (tests/providers/loopback.py: raw HTTP/1.1, TCP_NODELAY)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import Editor, StartEditor
from tests.providers.loopback import LoopbackServer, Reply, json_reply

LISTED = {"object": "list", "data": [{"id": "coder-7b", "object": "model"}, {"id": "coder-32b"},
                                     {"id": "coder-7b"}, {"id": 5}, {"no": "id"}]}


@pytest.fixture
async def model_server() -> AsyncIterator[LoopbackServer]:
    srv = LoopbackServer()
    await srv.start()
    yield srv
    await srv.close()


@pytest.fixture(autouse=True)
def _no_keys_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OLLAMA_API_KEY", "LSP_AGENT_API_KEY", "LOCAL_KEY"):
        monkeypatch.delenv(name, raising=False)


async def _start(start_editor: StartEditor, workspace: Path, server: LoopbackServer) -> Editor:
    return await start_editor(workspace, init_options={
        "model": "local/coder-7b", "providers": {"local": {"baseUrl": server.url, "apiKeyEnv": "LOCAL_KEY"}}})


async def test_the_picker_lists_the_current_known_and_served_models(workspace: Path, start_editor: StartEditor,
                                                                   model_server: LoopbackServer) -> None:
    model_server.routes["/v1/models"] = json_reply(200, LISTED)
    editor = await _start(start_editor, workspace, model_server)
    result = await editor.request("agent/models", {})
    assert result["current"] == "local/coder-7b"
    sources = {m["name"]: m["source"] for m in result["models"]}
    assert sources["local/coder-7b"] == "current" and sources["local/coder-32b"] == "server"
    assert sources["openai/gpt-4.1"] == "known"
    assert [m["name"] for m in result["models"]].count("local/coder-7b") == 1  # listed twice, offered once
    local = next(p for p in result["providers"] if p["name"] == "local")
    assert local == {"name": "local", "baseUrl": model_server.url, "key": "none", "keyEnv": "LOCAL_KEY",
                     "asked": True, "models": 2, "truncated": False}  # no `failure`
    openai = next(p for p in result["providers"] if p["name"] == "openai")
    assert openai["asked"] is False  # no key: the public API is not asked for nothing
    assert [p.path for p in model_server.probes] == ["/v1/models"]


async def test_a_key_from_the_editor_is_sent_to_that_provider_only(workspace: Path, start_editor: StartEditor,
                                                                  model_server: LoopbackServer) -> None:
    model_server.routes["/v1/models"] = json_reply(401, {"error": {"message": "missing key"}})
    editor = await _start(start_editor, workspace, model_server)
    (local,) = (await editor.request("agent/models", {"provider": "local"}))["providers"]
    assert local["failure"]["kind"] == "needs_key" and "enter one for 'local'" in local["failure"]["message"]

    assert await editor.request("agent/providerKey", {"provider": "local", "key": "sk-test-1"}) == {
        "provider": "local", "keySet": True}
    (local,) = (await editor.request("agent/models", {"provider": "local"}))["providers"]
    assert local["key"] == "editor" and local["failure"]["kind"] == "key_refused"
    assert model_server.probes[-1].headers["authorization"] == "Bearer sk-test-1"

    model_server.routes["/v1/models"] = json_reply(200, LISTED)
    (local,) = (await editor.request("agent/models", {"provider": "local"}))["providers"]
    assert "failure" not in local and local["models"] == 2

    await editor.request("agent/providerKey", {"provider": "local", "key": None})
    await editor.request("agent/models", {"provider": "local"})
    assert "authorization" not in model_server.probes[-1].headers


async def test_failures_are_classified_and_the_list_still_comes(workspace: Path, start_editor: StartEditor,
                                                               model_server: LoopbackServer) -> None:
    editor = await _start(start_editor, workspace, model_server)
    model_server.routes["/v1/models"] = Reply(status=200, chunks=[b"<html>not json"],
                                              headers={"Content-Type": "text/html"})
    result = await editor.request("agent/models", {"provider": "local"})
    assert result["providers"][0]["failure"]["kind"] == "malformed"
    assert [m["name"] for m in result["models"]] == ["local/coder-7b"]  # the current one is still offered

    model_server.routes["/v1/models"] = json_reply(404, {"error": {"message": "Not Found"}})
    (local,) = (await editor.request("agent/models", {"provider": "local"}))["providers"]
    assert local["failure"]["kind"] == "http_status" and "check the base URL" in local["failure"]["message"]

    model_server.routes["/v1/models"] = Reply(status=200, chunks=[b'{"data": ['], ending="stall")
    loop = asyncio.get_running_loop()
    began = loop.time()
    (local,) = (await editor.request("agent/models", {"provider": "local"}))["providers"]
    assert local["failure"]["kind"] == "timeout" and loop.time() - began < 30

    with pytest.raises(JsonRpcException, match="no provider 'nope'"):
        await editor.request("agent/models", {"provider": "nope"})
    await model_server.close()
    (local,) = (await editor.request("agent/models", {"provider": "local"}))["providers"]
    assert local["failure"]["kind"] in ("connection", "timeout")


async def test_a_run_sends_the_editors_key_as_the_bearer_token(workspace: Path, start_editor: StartEditor,
                                                              model_server: LoopbackServer) -> None:
    from tests.providers.loopback import chat_sse

    editor = await _start(start_editor, workspace, model_server)
    await editor.request("agent/providerKey", {"provider": "local", "key": "sk-run-key"})
    model_server.queue(Reply(chunks=[chat_sse([{"choices": [{"index": 0, "delta": {"content": "hi"},
                                                              "finish_reason": "stop"}]}])]))
    started = await editor.run("hello")
    assert (await editor.finished(started["generation"]))["stopReason"] == "final"
    assert model_server.requests[0].headers["authorization"] == "Bearer sk-run-key"
