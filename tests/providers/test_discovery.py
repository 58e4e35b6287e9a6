"""The server's facts (context window, model id) and provider configuration that composes.

Payload shapes are those the servers send (llama.cpp, vLLM, Ollama); the whole path runs as
`lsp-agent run` against the loopback server, whose probes answer like the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path

from lsp_agent.providers.discovery import discover, facts_from_models, ollama_context
from lsp_agent.settings.config import ProviderConfig
from tests.providers.loopback import LoopbackServer, Reply, json_reply, run_agent, turn, write_workspace

LLAMA_MODELS = {"object": "list", "data": [{"id": "smollm2.gguf", "object": "model", "owned_by": "llamacpp",
                                            "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx_train": 8192,
                                                     "n_ctx": 4096, "n_params": 134515008}}]}
VLLM_MODELS = {"object": "list", "data": [{"id": "Qwen/Qwen2.5-Coder-7B", "object": "model",
                                           "max_model_len": 32768}]}


def test_models_payloads_of_llama_cpp_and_vllm() -> None:
    llama = facts_from_models(LLAMA_MODELS, "anything")  # the only model served is the one
    assert (llama.model_id, llama.context_window) == ("smollm2.gguf", 4096)  # n_ctx, not n_ctx_train
    vllm = facts_from_models(VLLM_MODELS, "Qwen/Qwen2.5-Coder-7B")
    assert (vllm.model_id, vllm.context_window) == ("Qwen/Qwen2.5-Coder-7B", 32768)
    two = {"data": [{"id": "a", "max_model_len": 1000}, {"id": "b", "max_model_len": 2000}]}
    assert facts_from_models(two, "c").context_window is None  # not ours to guess
    assert facts_from_models({"error": "nope"}, "a").context_window is None


def test_ollama_show_prefers_num_ctx_over_the_models_length() -> None:
    show = {"parameters": "stop \"<|im_end|>\"\nnum_ctx 16384", "model_info": {"qwen2.context_length": 32768}}
    assert ollama_context(show) == 16384
    assert ollama_context({"model_info": {"llama.context_length": 131072}}) == 131072
    assert ollama_context({"modelfile": "FROM x"}) is None


async def test_discover_falls_back_through_props_and_api_show(server: LoopbackServer) -> None:
    config = ProviderConfig.model_validate({"baseUrl": server.url})
    assert (await discover(config, "m")).context_window is None  # every probe 404s: nothing reported
    server.routes["/props"] = json_reply(200, {"default_generation_settings": {"n_ctx": 2048}})
    facts = await discover(config, "m")
    assert (facts.context_window, facts.source) == (2048, "llama.cpp /props n_ctx")
    del server.routes["/props"]
    server.routes["/api/show"] = json_reply(200, {"model_info": {"gemma.context_length": 8192}})
    assert (await discover(config, "m")).context_window == 8192
    assert [p.path for p in server.probes][-3:] == ["/v1/models", "/props", "/api/show"]
    assert json.loads(server.probes[-1].body) == {"model": "m"}
    assert server.requests == []  # probes never take a queued model reply


async def test_the_run_header_shows_the_servers_window_and_the_budget_uses_it(
        server: LoopbackServer, tmp_path: Path) -> None:
    server.routes["/v1/models"] = json_reply(200, LLAMA_MODELS)
    server.queue(Reply(chunks=[turn("chat", text="hello")]))
    root = write_workspace(tmp_path / "ws", {"a.txt": "a\n"})

    run = await run_agent("Say hello.", root, server.url, "chat")

    assert run.returncode == 0, run.stderr
    assert (f"lsp-agent: openai-compatible/m via {server.url}/chat/completions (chat) · server model smollm2.gguf "
            "· context window 4096 tokens (from the server: llama.cpp /v1/models meta.n_ctx)") in run.stderr
    # The window reached the budget: the output reserve is capped at a quarter of 4096.
    request = [e for e in run.events if e.get("type") == "run_finish"]
    assert request and request[0]["stopReason"] == "final"


async def test_a_declared_window_beats_the_servers(server: LoopbackServer, tmp_path: Path) -> None:
    server.routes["/v1/models"] = json_reply(200, LLAMA_MODELS)
    server.queue(Reply(chunks=[turn("chat", text="hello")]))
    root = write_workspace(tmp_path / "ws", {"a.txt": "a\n"}, "[compaction]\ncontext_window = 20000\n")

    run = await run_agent("Say hello.", root, server.url, "chat")

    assert run.returncode == 0, run.stderr
    assert "context window 20000 tokens (configuration: compaction.context_window)" in run.stderr


async def test_base_url_and_config_provider_fields_merge(server: LoopbackServer, tmp_path: Path) -> None:
    server.queue(Reply(chunks=[turn("chat", text="hello")]))
    root = write_workspace(tmp_path / "ws", {"a.txt": "a\n"})

    run = await run_agent("Say hello.", root, server.url, "chat",
                          "--config", "providers.openai-compatible.idleTimeoutS=10",
                          "--config", "providers.openai-compatible.maxOutputTokens=77")

    assert run.returncode == 0, run.stderr
    assert "Field required" not in run.stderr
    assert server.requests[0].json()["max_tokens"] == 77  # the --config fields took effect
