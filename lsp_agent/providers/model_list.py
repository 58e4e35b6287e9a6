"""What models an OpenAI-compatible server offers: its `/v1/models` list, asked once, bounded.

For the editor's model picker and its "test the connection": one GET with a short timeout, a body
read up to a bound, at most MAX_MODELS ids kept. Every failure is classified, so the picker can say
what to do (start the server, enter a key, fix the base URL) instead of showing an empty list.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from lsp_agent.domain import bounded_json
from lsp_agent.providers import keys
from lsp_agent.providers.http_base import DEFAULT_API_KEY_ENV, error_message
from lsp_agent.providers.http_client import httpx, new_client
from lsp_agent.settings.config import ProviderConfig

__all__ = ["MAX_BODY_BYTES", "MAX_MODELS", "ListFailure", "ModelList", "list_models", "model_ids"]

#: a model list is a few KB; a server sending more than this is not answering the question asked
MAX_BODY_BYTES = 1 << 20
MAX_MODELS = 500
MAX_ID_CHARS = 200
TIMEOUT_S = 5.0

FailureKind = Literal["connection", "timeout", "needs_key", "key_refused", "http_status", "malformed"]


@dataclass(frozen=True, slots=True)
class ListFailure:
    kind: FailureKind
    message: str


@dataclass(frozen=True, slots=True)
class ModelList:
    models: tuple[str, ...] = ()
    failure: ListFailure | None = None
    #: the server listed more than MAX_MODELS
    truncated: bool = False


def model_ids(payload: Any) -> tuple[list[str], bool]:
    """The ids of an OpenAI-style list (`{"data": [{"id": ...}]}`; Ollama's `{"models": [{"name"}]}`
    too), without duplicates, each a plain printable string."""
    entries: Any = None
    if isinstance(payload, dict):
        entries = payload.get("data") if isinstance(payload.get("data"), list) else payload.get("models")
    ids: list[str] = []
    seen: set[str] = set()
    for entry in entries if isinstance(entries, list) else []:
        name = entry.get("id", entry.get("name")) if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or len(name) > MAX_ID_CHARS or not name.isprintable():
            continue
        if name not in seen:
            if len(ids) == MAX_MODELS:
                return ids, True
            seen.add(name)
            ids.append(name)
    return ids, False


async def _body(response: httpx.Response) -> bytes | None:
    buf = bytearray()
    async for chunk in response.aiter_bytes():
        buf += chunk
        if len(buf) > MAX_BODY_BYTES:
            return None
    return bytes(buf)


def _status_failure(status: int, raw: bytes, url: str, provider: str, key_env: str) -> ListFailure:
    detail = error_message(raw)
    if status in (401, 403):
        if keys.api_key(provider, key_env) is None:
            return ListFailure("needs_key", f"{url} answered HTTP {status} ({detail}): the server wants an API key "
                               f"-- enter one for {provider!r}, or set {key_env} for the editor")
        return ListFailure("key_refused", f"{url} answered HTTP {status} ({detail}): the server refused the key "
                           f"for {provider!r} -- enter it again")
    hint = " -- check the base URL (OpenAI-compatible servers serve under /v1)" if status == 404 else ""
    return ListFailure("http_status", f"{url} answered HTTP {status} ({detail}){hint}")


async def list_models(provider: str, config: ProviderConfig, *, timeout_s: float = TIMEOUT_S) -> ModelList:
    url = config.base_url.rstrip("/") + "/models"
    key_env = config.api_key_env or DEFAULT_API_KEY_ENV
    headers = {"Accept": "application/json", **config.headers}
    key = keys.api_key(provider, key_env)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    try:
        async with asyncio.timeout(timeout_s), new_client(config.base_url, timeout=timeout_s) as client, \
                client.stream("GET", url, headers=headers) as response:
            raw = await _body(response)
            status = response.status_code
    except TimeoutError:
        return ModelList(failure=ListFailure("timeout", f"{url} did not answer within {timeout_s:g} s"))
    except httpx.HTTPError as exc:
        reason = str(exc).strip() or type(exc).__name__
        return ModelList(failure=ListFailure("connection", f"cannot reach {url}: {reason} -- is the server "
                                             "running at this base URL?"))
    if raw is None:
        return ModelList(failure=ListFailure("malformed", f"{url} sent more than {MAX_BODY_BYTES} bytes: "
                                             "not a model list"))
    if not 200 <= status < 300:
        return ModelList(failure=_status_failure(status, raw[:4096], url, provider, key_env))
    try:
        payload = bounded_json.loads(raw)
    except ValueError as exc:
        return ModelList(failure=ListFailure("malformed", f"{url} did not answer a JSON model list ({exc})"))
    ids, truncated = model_ids(payload)
    if not ids and not (isinstance(payload, dict) and isinstance(payload.get("data", payload.get("models")), list)):
        return ModelList(failure=ListFailure("malformed", f"{url} answered JSON without a `data` list of models"))
    return ModelList(tuple(ids), truncated=truncated)
