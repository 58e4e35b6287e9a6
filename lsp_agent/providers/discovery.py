"""What the server says about the model it serves: its context window and its model id.

Local servers run models with a context the user chose at start-up (llama-server `-c`,
vLLM `--max-model-len`, Ollama `num_ctx`), usually far from any registry value. Read where
each server reports it: llama.cpp's `/v1/models` `meta.n_ctx` (or `/props`), vLLM's
`max_model_len`, Ollama's `/api/show`. Every probe is short and optional: any failure
means "not reported" and configuration applies.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from lsp_agent.domain import bounded_json
from lsp_agent.providers import keys
from lsp_agent.providers.http_client import httpx, new_client
from lsp_agent.settings.config import ProviderConfig

__all__ = ["ServerFacts", "discover", "facts_from_models", "ollama_context"]

_TIMEOUT_S = 3.0


@dataclass(frozen=True, slots=True)
class ServerFacts:
    #: The model id the server reports (the one served, when it serves exactly one).
    model_id: str | None = None
    context_window: int | None = None
    #: Where the context window came from, for the run header.
    source: str | None = None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def facts_from_models(payload: Any, model: str) -> ServerFacts:
    """Facts from an OpenAI-style `/v1/models` list: the entry named `model`, or the only one."""
    data = payload.get("data") if isinstance(payload, dict) else None
    entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    entry = next((e for e in entries if e.get("id") == model), entries[0] if len(entries) == 1 else None)
    if entry is None:
        return ServerFacts()
    model_id = entry.get("id") if isinstance(entry.get("id"), str) else None
    raw_meta = entry.get("meta")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    if (n_ctx := _positive(meta.get("n_ctx"))) is not None:
        return ServerFacts(model_id, n_ctx, "llama.cpp /v1/models meta.n_ctx")
    if (max_len := _positive(entry.get("max_model_len"))) is not None:
        return ServerFacts(model_id, max_len, "vLLM /v1/models max_model_len")
    return ServerFacts(model_id)


def ollama_context(payload: Any) -> int | None:
    """`/api/show`: the `num_ctx` the model runs with if set, else the model's `*.context_length`."""
    if not isinstance(payload, dict):
        return None
    for line in str(payload.get("parameters") or "").splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return int(value.strip())
    info = payload.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if isinstance(key, str) and key.endswith(".context_length") and _positive(value):
                return int(value)
    return None


def _root(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[:-3] if base.endswith("/v1") else base


async def _json(client: httpx.AsyncClient, method: str, url: str, headers: dict[str, str],
                body: dict[str, Any] | None = None) -> Any:
    try:
        response = await client.request(method, url, headers=headers, json=body)
        # the model server's JSON, bounded like every answer from it
        return bounded_json.loads(response.content) if response.is_success else None
    except (httpx.HTTPError, ValueError):
        return None


async def discover(config: ProviderConfig, model: str, *, timeout_s: float = _TIMEOUT_S,
                   provider_name: str | None = None) -> ServerFacts:
    """Ask the server; a ServerFacts with None fields when it says nothing (or does not answer)."""
    headers = dict(config.headers)
    key = keys.api_key(provider_name, config.api_key_env or "LSP_AGENT_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    base, root = config.base_url.rstrip("/"), _root(config.base_url)
    try:
        async with new_client(config.base_url, timeout=timeout_s) as client:
            return await asyncio.wait_for(_probe(client, base, root, model, headers), timeout_s * 2)
    except (TimeoutError, httpx.HTTPError):
        return ServerFacts()


async def _probe(client: httpx.AsyncClient, base: str, root: str, model: str,
                 headers: dict[str, str]) -> ServerFacts:
    facts = facts_from_models(await _json(client, "GET", f"{base}/models", headers), model)
    if facts.context_window is not None:
        return facts
    props = await _json(client, "GET", f"{root}/props", headers)  # llama.cpp without meta.n_ctx
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
        if n_ctx is not None:
            return ServerFacts(facts.model_id, n_ctx, "llama.cpp /props n_ctx")
    show = await _json(client, "POST", f"{root}/api/show", headers, {"model": facts.model_id or model})
    context = ollama_context(show)
    if context is not None:
        return ServerFacts(facts.model_id, context, "Ollama /api/show")
    return facts
