"""httpx for the providers, without the memory they do not need.

- httpx's package `__init__` imports its command-line client (click, rich, pygments: ≈ 5 MB of
  RSS and tens of milliseconds) whenever those happen to be installed; lsp-agent never runs it, so
  `httpx._main` is given a stand-in before httpx is first imported.
- An `httpx.AsyncClient` loads the CA bundle into a new SSL context (≈ 1.3 MB) even when every
  request goes to a plain `http://` server (a local llama.cpp, Ollama, vLLM); such a client gets an
  SSL context without CAs instead — still verifying, so any TLS connection it were asked to make
  would fail closed, never go unchecked. With a proxy configured, the default context is kept.
- Requests go through httpcore's pool on asyncio streams (asyncio_transport.py), not anyio's —
  except behind a proxy from the environment, which httpx honours only with its own transports.
"""

from __future__ import annotations

import ssl
import sys
import types
import urllib.request
from typing import Any


def _without_cli() -> None:
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    stand_in = types.ModuleType("httpx._main")

    def main() -> None:
        raise SystemExit("the httpx command line is not available inside lsp-agent")

    stand_in.main = main  # type: ignore[attr-defined]
    sys.modules["httpx._main"] = stand_in


_without_cli()

import httpx  # noqa: E402  (after the stand-in)

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
    from lsp_agent.providers.asyncio_transport import AsyncioTransport  # (it takes httpx from this module)

    verify = options.pop("verify", _no_ca_context() if url.lower().startswith("http://") else True)
    return httpx.AsyncClient(transport=AsyncioTransport(httpx.create_ssl_context(verify=verify)), **options)
