"""Fixtures of the provider tests (the kit itself lives in loopback.py)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from lsp_agent.providers.chat_completions import ChatCompletionsProvider
from lsp_agent.providers.http_base import HttpStreamingProvider, RetryPolicy
from lsp_agent.providers.responses import ResponsesProvider
from lsp_agent.settings.config import ProviderConfig
from tests.providers.loopback import LoopbackServer, ProviderFactory, Wire


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    srv = LoopbackServer()
    await srv.start()
    yield srv
    await srv.close()


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on: connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def make_provider() -> AsyncIterator[ProviderFactory]:
    made: list[HttpStreamingProvider] = []

    def make(wire: Wire, base_url: str, *, max_retries: int = 3, idle_timeout_s: float = 5.0,
             api_key_env: str = "LSP_AGENT_TEST_KEY", headers: dict[str, str] | None = None,
             tool_call_format: str = "native", request_timeout_s: float = 1800.0,
             **kwargs: Any) -> HttpStreamingProvider:
        config = ProviderConfig.model_validate({
            "base_url": base_url, "wire": wire, "api_key_env": api_key_env, "headers": headers or {},
            "max_retries": max_retries, "idle_timeout_s": idle_timeout_s, "timeout_s": 5.0,
            "request_timeout_s": request_timeout_s,
            "tool_call_format": tool_call_format,
        })
        kwargs.setdefault("retry", RetryPolicy(base_s=0.005))
        kwargs.setdefault("model", "test-model")
        cls = ChatCompletionsProvider if wire == "chat" else ResponsesProvider
        provider = cls(config, **kwargs)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()


@pytest.fixture(autouse=True)
def _no_test_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("LSP_AGENT_TEST_KEY", raising=False)
    yield


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy settings from the machine's environment; the test sets its own on the returned patch."""
    for scheme in ("http", "https", "all", "no"):
        for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY"):
            monkeypatch.delenv(name, raising=False)
    return monkeypatch
