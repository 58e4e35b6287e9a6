"""The providers' httpx clients (a CA bundle costs peak RSS): no CA bundle is loaded for a plain http:// server
(a client that could not verify a TLS peer fails closed), the default one is for https:// or behind a
proxy (where the client is httpx's own, with its proxy transports), and a plain-http client still talks
to a real loopback server."""

from __future__ import annotations

import asyncio
import ssl

import pytest

from lsp_agent.providers.asyncio_transport import AsyncioTransport
from lsp_agent.providers.http_client import new_client


def context_of(client: object) -> ssl.SSLContext:
    transport = client._transport  # type: ignore[attr-defined]
    context = transport.ssl_context if isinstance(transport, AsyncioTransport) else transport._pool._ssl_context
    assert isinstance(context, ssl.SSLContext)
    return context


@pytest.mark.usefixtures("no_proxy_env")
async def test_plain_http_loads_no_ca_bundle_and_still_verifies() -> None:
    async with new_client("http://127.0.0.1:8080/v1") as client:
        context = context_of(client)
        assert context.cert_store_stats()["x509_ca"] == 0
        assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    async with new_client("https://api.example.com/v1") as client:
        assert context_of(client).cert_store_stats()["x509_ca"] > 0


async def test_a_proxy_keeps_the_default_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.invalid:3128")
    async with new_client("http://127.0.0.1:8080/v1") as client:
        assert not isinstance(client._transport, AsyncioTransport)  # httpx's own client, its proxy mounts
        assert context_of(client).cert_store_stats()["x509_ca"] > 0


async def test_a_plain_http_client_talks_to_a_real_server() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, new_client(f"http://127.0.0.1:{port}/v1") as client:
        response = await client.get(f"http://127.0.0.1:{port}/v1/models")
    assert response.status_code == 200 and response.json() == {}
