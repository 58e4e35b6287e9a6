"""The providers' asyncio transport (anyio's streams were a per-step cost): requests go through httpcore's pool on
asyncio streams, not anyio's; TLS is verified (a certificate from an unknown CA is refused, one from a
trusted CA streams a reply); a pooled connection the server has closed is replaced without a retry; and
socket failures keep httpx's exception types, so the providers classify them as before."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpcore
import pytest
import trustme

from lsp_agent.domain.ports import ProviderErrorKind, ReplyDone
from lsp_agent.providers.asyncio_transport import AsyncioTransport
from lsp_agent.providers.http_client import httpx, new_client
from tests.helpers import wait_for
from tests.providers.loopback import LoopbackServer, ProviderFactory, Reply, Wire, collect, simple_request, turn

WIRES: list[Wire] = ["chat", "responses"]


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def tls_server(ca: trustme.CA) -> AsyncIterator[LoopbackServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    srv = LoopbackServer()
    await srv.start(tls=context)
    yield srv
    await srv.close()


def reply(wire: Wire) -> Reply:
    return Reply(chunks=[turn(wire, call=("c1", "read_file", {"path": "a.py"}))], chunk_delay=0)


async def test_the_providers_client_never_opens_a_connection_through_anyio(
        server: LoopbackServer, make_provider: ProviderFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a connection was opened through anyio")

    monkeypatch.setattr(httpcore.AnyIOBackend, "connect_tcp", refuse)
    async with new_client(server.url) as client:
        assert isinstance(client._transport, AsyncioTransport)  # type: ignore[attr-defined]
    server.queue(reply("chat"))
    events, error = await collect(make_provider("chat", server.url), simple_request())
    assert error is None and isinstance(events[-1], ReplyDone)


@pytest.mark.parametrize("wire", WIRES)
async def test_tls_with_a_trusted_ca_streams_a_reply_and_an_unknown_ca_is_refused(
        wire: Wire, tls_server: LoopbackServer, ca: trustme.CA, make_provider: ProviderFactory,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert tls_server.url.startswith("https://")
    tls_server.queue(reply(wire))
    events, error = await collect(make_provider(wire, tls_server.url, max_retries=0), simple_request())
    assert events == [] and error is not None
    assert error.kind is ProviderErrorKind.CONNECTION
    assert "CERTIFICATE_VERIFY_FAILED" in error.message
    assert isinstance(error.__cause__, httpx.ConnectError)
    assert tls_server.requests == []  # nothing was sent to a server that could not be verified

    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))  # how a user trusts a private CA
    events, error = await collect(make_provider(wire, tls_server.url), simple_request())
    assert error is None, error
    done = events[-1]
    assert isinstance(done, ReplyDone) and done.reply.tool_calls[0].name == "read_file"
    assert len(tls_server.requests) == 1


async def test_a_pooled_connection_the_server_closed_is_replaced_without_a_retry(
        make_provider: ProviderFactory) -> None:
    """The server promises keep-alive but closes the connection after each reply (as servers do when
    their idle timeout passes): the next request must see it is closed and open a new one, not send
    into it, fail and spend a retry."""
    connections = 0
    body = turn("chat", call=("c1", "read_file", {"path": "a.py"}))

    async def answer_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer_then_close, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        provider = make_provider("chat", f"http://127.0.0.1:{port}/v1")
        for _ in range(3):
            events, error = await collect(provider, simple_request())
            assert error is None and isinstance(events[-1], ReplyDone), error
            assert provider.last_attempts == 1
            await asyncio.sleep(0.05)  # the close reaches the client
    assert connections == 3


async def test_socket_failures_keep_httpx_exception_types(closed_port: int) -> None:
    async with new_client(f"http://127.0.0.1:{closed_port}/v1") as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{closed_port}/v1/models")

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
            await writer.drain()
            await reader.read()  # until the client gives up and closes
        finally:
            writer.close()

    server = await asyncio.start_server(stall, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    async with (server, new_client(url, timeout=httpx.Timeout(5.0, read=0.2)) as client,
                client.stream("GET", f"{url}/models") as response):
        assert response.status_code == 200
        with pytest.raises(httpx.ReadTimeout):
            await response.aread()


async def test_a_request_cancelled_mid_stream_leaves_a_working_client(
        server: LoopbackServer, make_provider: ProviderFactory) -> None:
    server.keep_alive = True
    server.queue(Reply(chunks=[b": thinking\n\n"], ending="stall"), reply("chat"))
    provider = make_provider("chat", server.url)
    stalled = asyncio.create_task(collect(provider, simple_request()))
    await wait_for(lambda: server.stalled)  # the first chunk is sent; the server is silent
    stalled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stalled
    events, error = await collect(provider, simple_request())
    assert error is None and isinstance(events[-1], ReplyDone)
    assert server.connections == 2  # the interrupted connection was dropped, not reused


@pytest.mark.parametrize("bypassed", [False, True])
async def test_a_proxy_from_the_environment_still_carries_the_requests(
        bypassed: bool, server: LoopbackServer, make_provider: ProviderFactory,
        no_proxy_env: pytest.MonkeyPatch) -> None:
    """The loopback server plays an HTTP proxy for a host that does not resolve: the request reaches
    it in absolute form (httpx's proxy transport, mounted by the client); NO_PROXY sends it direct."""
    monkeypatch = no_proxy_env
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.port}")
    if bypassed:
        monkeypatch.setenv("NO_PROXY", "model.invalid")
    server.queue(reply("chat"))
    events, error = await collect(make_provider("chat", "http://model.invalid/v1", max_retries=0), simple_request())
    if bypassed:
        assert error is not None and error.kind is ProviderErrorKind.CONNECTION
        assert server.requests == []
    else:
        assert error is None and isinstance(events[-1], ReplyDone)
        assert [r.path for r in server.requests] == ["http://model.invalid/v1/chat/completions"]
