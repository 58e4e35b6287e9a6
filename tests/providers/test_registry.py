"""Model/provider resolution and provider construction from settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_agent.domain.ports import ProviderError, ProviderErrorKind, ReplyDone
from lsp_agent.providers.chat_completions import ChatCompletionsProvider
from lsp_agent.providers.registry import DEFAULT_CONTEXT_WINDOW, build_provider, resolve_model
from lsp_agent.providers.responses import ResponsesProvider
from lsp_agent.providers.scripted import ScriptedProvider
from lsp_agent.settings.config import Settings
from tests.providers.loopback import LoopbackServer, Reply, chat_sse, collect, simple_request


def settings(**fields: object) -> Settings:
    return Settings.model_validate(fields)


def test_known_openai_model_resolves_with_its_builtin_provider() -> None:
    resolved = resolve_model(settings(), "openai/gpt-4.1")
    assert (resolved.provider_name, resolved.model_id, resolved.known) == ("openai", "gpt-4.1", True)
    assert resolved.provider_config is not None
    assert resolved.provider_config.base_url == "https://api.openai.com/v1"
    assert resolved.provider_config.api_key_env == "OPENAI_API_KEY"
    assert resolved.provider_config.wire == "chat"
    assert (resolved.info.context_window, resolved.info.reasoning, resolved.info.tools) == (1_047_576, False, True)


def test_bare_known_name_uses_its_usual_provider() -> None:
    assert resolve_model(settings(), "gpt-5").provider_name == "openai"
    assert resolve_model(settings(), "llama3.1").provider_name == "ollama"


def test_ollama_tags_share_the_family_facts() -> None:
    resolved = resolve_model(settings(), "ollama/qwen2.5-coder:7b")
    assert resolved.known
    assert resolved.model_id == "qwen2.5-coder:7b"
    assert resolved.provider_config is not None
    assert resolved.provider_config.base_url == "http://localhost:11434/v1"
    assert resolved.info.context_window == 32_768


def test_everything_after_the_first_slash_is_the_model_id() -> None:
    resolved = resolve_model(settings(), "vllm/Qwen/Qwen2.5-Coder-32B")
    assert (resolved.provider_name, resolved.model_id) == ("vllm", "Qwen/Qwen2.5-Coder-32B")
    assert resolved.provider_config is None
    assert not resolved.known
    assert resolved.info.context_window == DEFAULT_CONTEXT_WINDOW
    assert resolved.info.reasoning is None and resolved.info.tools is None


def test_user_declarations_override_the_registry_most_specific_first() -> None:
    s = settings(models={
        "llama3.1": {"contextWindow": 8192, "tools": False},
        "ollama/llama3.1": {"contextWindow": 16384},
    })
    info = resolve_model(s, "ollama/llama3.1").info
    assert (info.context_window, info.tools, info.reasoning) == (16384, False, False)
    assert resolve_model(s, "other/llama3.1").info.context_window == 8192


def test_a_configured_provider_replaces_the_builtin_entry() -> None:
    s = settings(providers={"openai": {"baseUrl": "http://proxy:8080/v1", "wire": "responses"}})
    config = resolve_model(s, "openai/gpt-5").provider_config
    assert config is not None and (config.base_url, config.wire) == ("http://proxy:8080/v1", "responses")


def test_build_provider_picks_the_wire_class() -> None:
    chat = build_provider(settings(), "openai/gpt-4.1")
    assert isinstance(chat, ChatCompletionsProvider)
    assert chat.url == "https://api.openai.com/v1/chat/completions"
    assert chat.label == "openai/gpt-4.1"
    assert chat.scripted is False
    responses = build_provider(settings(), "openai/gpt-5", wire="responses")
    assert isinstance(responses, ResponsesProvider)
    assert responses.url == "https://api.openai.com/v1/responses"
    assert responses.reasoning_items is True
    no_reasoning = build_provider(settings(), "openai/gpt-4.1", wire="responses")
    assert isinstance(no_reasoning, ResponsesProvider) and no_reasoning.reasoning_items is False


def test_openai_compatible_without_base_url_names_the_fix() -> None:
    with pytest.raises(ProviderError) as caught:
        build_provider(settings(), "openai-compatible/my-model")
    assert caught.value.kind is ProviderErrorKind.CONFIG
    assert "--base-url" in caught.value.message
    assert "[providers.openai-compatible]" in caught.value.message


def test_unknown_provider_without_base_url_is_a_config_error() -> None:
    with pytest.raises(ProviderError) as caught:
        build_provider(settings(), "nowhere/model")
    assert caught.value.kind is ProviderErrorKind.CONFIG


def test_base_url_flag_makes_any_provider_usable() -> None:
    provider = build_provider(settings(), "openai-compatible/my-model", base_url="http://127.0.0.1:8000/v1/")
    assert isinstance(provider, ChatCompletionsProvider)
    assert provider.url == "http://127.0.0.1:8000/v1/chat/completions"
    assert provider.config.api_key_env == "LSP_AGENT_API_KEY"


def test_scripted_names_give_the_scripted_provider(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [{"text": "hello"}]}))
    provider = build_provider(settings(script=str(script)), "scripted/demo")
    assert isinstance(provider, ScriptedProvider)
    assert provider.scripted is True


async def test_the_model_id_not_the_full_name_goes_on_the_wire(server: LoopbackServer) -> None:
    server.queue(Reply(chunks=[chat_sse([{"choices": [{"index": 0, "delta": {"content": "ok"}}]}])]))
    s = settings(model="local/Qwen/Qwen3-Coder", providers={"local": {"baseUrl": server.url}})
    provider = build_provider(s, s.model)
    assert isinstance(provider, ChatCompletionsProvider)
    try:
        events, error = await collect(provider, simple_request(model=s.model))
    finally:
        await provider.aclose()
    assert error is None and isinstance(events[-1], ReplyDone)
    assert server.requests[0].json()["model"] == "Qwen/Qwen3-Coder"


def test_an_unknown_wire_protocol_is_a_config_error() -> None:
    with pytest.raises(ProviderError) as caught:
        build_provider(settings(), "openai/gpt-4.1", wire="grpc")
    assert caught.value.kind is ProviderErrorKind.CONFIG
    assert "chat or responses" in caught.value.message
