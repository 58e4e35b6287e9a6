"""The providers' HTTP transport: httpcore's connection pool over plain asyncio streams.

httpx's default transport reaches the socket through anyio, which costs a cancel scope per read or
write and a context lookup per call: 0.13 to 0.35 ms of client CPU per streamed request on the
2-CPU machines measured, 5 to 10 % of a harness step (bench/http_client.py, docs/benchmarks.md).
lsp-agent only ever runs on asyncio, so the pool gets a network backend written on asyncio's own
streams (httpcore's documented extension point), and this transport maps requests, responses and
errors between httpx and httpcore as httpx's does.
Behind a proxy from the environment the providers keep httpx's own client (http_client.py).
"""

# ruff: noqa: ASYNC109  (httpcore's stream and backend interface takes `timeout` parameters)

from __future__ import annotations

import asyncio
import select
import ssl
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore

from lsp_agent.providers.httpx_without_cli import httpx

__all__ = ["AsyncioBackend", "AsyncioTransport"]

#: httpcore's errors and the httpx ones callers catch; the first match wins, subclasses first.
_ERRORS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for source, target in _ERRORS:
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection; every socket failure becomes the httpcore error for what was being done."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(f"no data for {timeout:g}s") from exc
        except OSError as exc:  # reset, TLS failure (ssl.SSLError is an OSError)
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            self._writer.write(buffer)
            async with asyncio.timeout(timeout):
                await self._writer.drain()
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(f"could not send for {timeout:g}s") from exc
        except OSError as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        # Close, let the loop flush once, then drop whatever is left: waiting for a TLS peer's
        # close_notify could hang a cancelled request (anyio's stream closes the same way).
        transport = self._writer.transport
        try:
            if not transport.is_closing():
                transport.close()
                await asyncio.sleep(0)
        finally:
            transport.abort()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError as exc:
            await self.aclose()
            raise httpcore.ConnectTimeout(f"TLS handshake took over {timeout:g}s") from exc
        except OSError as exc:  # a certificate that does not verify lands here (ssl.SSLError)
            await self.aclose()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        if info in ("ssl_object", "socket"):
            return self._writer.get_extra_info(info)
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info == "is_readable":  # asked of an idle pooled connection: has the server closed it?
            sock = self._writer.get_extra_info("socket")  # (a closed socket stays readable: EOF)
            return sock is None or sock.fileno() < 0 or _readable(sock.fileno())
        return None


def _readable(fd: int) -> bool:
    if not hasattr(select, "poll"):  # Windows
        return bool(select.select([fd], [], [], 0)[0])
    poller = select.poll()  # not select(): it refuses descriptors above 1023
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """TCP connections for httpcore's pool, opened with asyncio (TCP_NODELAY is asyncio's default).
    The pool below asks for no local address, socket options or Unix sockets."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(host, port)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"no connection to {host}:{port} within {timeout:g}s") from exc
        except OSError as exc:  # refused, unreachable, name not resolved
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _Body(httpx.AsyncByteStream):
    """A response body from the pool, its errors as httpx's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        with _as_httpx_errors():
            await self._stream.aclose()


class AsyncioTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over a keep-alive pool (httpx's default limits) on the asyncio backend."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self.ssl_context = ssl_context
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0,
            network_backend=AsyncioBackend())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        url = request.url
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            response = await self._pool.handle_async_request(core_request)
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_Body(response.stream), extensions=response.extensions)

    async def aclose(self) -> None:
        await self._pool.aclose()
