"""httpx for the providers, without the memory they do not need.

- httpx comes from httpx_without_cli.py (no command-line client loaded).
- An `httpx.AsyncClient` loads the CA bundle into a new SSL context (≈ 1.3 MB) even when every
  request goes to a plain `http://` server (a local llama.cpp, Ollama, vLLM); such a client gets an
  SSL context without CAs instead — still verifying, so any TLS connection it were asked to make
  would fail closed, never go unchecked. With a proxy configured, the default context is kept.
- Requests go through httpcore's pool on asyncio streams (asyncio_transport.py), not anyio's —
  except behind a proxy from the environment, which httpx honours only with its own transports.
"""

from __future__ import annotations

import ssl
import urllib.request
from typing import Any

from lsp_agent.providers.httpx_without_cli import httpx

__all__ = ["httpx", "new_client"]


def _no_ca_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED and hostname checks: fails closed
    return context


def new_client(url: str, **options: Any) -> httpx.AsyncClient:
    """An AsyncClient for requests to `url`. Without a proxy in the environment it runs over the
    asyncio transport, and for plain http loads no CA bundle. With one, it is httpx's own client,
    untouched: httpx honours proxies from the environment only when it builds its transports."""
    proxies = urllib.request.getproxies()
    if any(proxies.get(scheme) for scheme in ("http", "https", "all")):
        return httpx.AsyncClient(**options)
    from lsp_agent.providers.asyncio_transport import AsyncioTransport

    verify = options.pop("verify", _no_ca_context() if url.lower().startswith("http://") else True)
    return httpx.AsyncClient(transport=AsyncioTransport(httpx.create_ssl_context(verify=verify)), **options)
