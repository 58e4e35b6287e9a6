"""Provider test kit: a real loopback HTTP/1.1 server, body builders, provider factory.

It speaks raw HTTP over asyncio streams: each queued Reply is written with
chunked transfer encoding, one flushed write per chunk with a short pause, so
the client really receives the body in the pieces the test chose. It can also
cut the connection mid-body or stall forever, and it records every request.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from lsp_agent.core.history import Message, Role, TextPart
from lsp_agent.core.ports import ModelRequest, ProviderError, ProviderEvent, ToolSpec
from lsp_agent.providers.http_base import HttpStreamingProvider

Ending = Literal["complete", "cut", "stall"]


@dataclass
class Reply:
    status: int = 200
    chunks: list[bytes] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    #: complete: chunked terminator; cut: close the socket mid-body; stall: go silent
    ending: Ending = "complete"
    chunk_delay: float = 0.001


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status=status, chunks=[json.dumps(payload).encode()],
                 headers={"Content-Type": "application/json", **(headers or {})})


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    def json(self) -> Any:
        return json.loads(self.body)


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 429: "Too Many Requests",
            500: "Internal Server Error", 503: "Service Unavailable"}


class LoopbackServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        #: served when the queue is empty (e.g. "500 forever")
        self.fallback: Reply | None = None
        self.requests: list[Received] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            request_line = await reader.readline()
            if not request_line:
                return
            method, path, _ = request_line.decode().split(" ", 2)
            headers: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.requests.append(Received(method, path, headers, body, time.monotonic()))
            reply = self.replies.popleft() if self.replies else self.fallback
            assert reply is not None, "the test queued no reply for this request"
            head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}",
                    "Transfer-Encoding: chunked", "Connection: close"]
            head += [f"{k}: {v}" for k, v in reply.headers.items()]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            await writer.drain()
            for chunk in reply.chunks:
                writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                await writer.drain()
                await asyncio.sleep(reply.chunk_delay)
            if reply.ending == "complete":
                writer.write(b"0\r\n\r\n")
                await writer.drain()
            elif reply.ending == "stall":
                await asyncio.sleep(3600)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()


# --- building bodies ----------------------------------------------------------------------------


def chat_sse(chunks: list[dict[str, Any]], done: bool = True) -> bytes:
    text = "".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks)
    return (text + ("data: [DONE]\n\n" if done else "")).encode()


def responses_sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n"
                   for e in events).encode()


def split_every(body: bytes, size: int) -> list[bytes]:
    return [body[i:i + size] for i in range(0, len(body), size)]


def splits_inside_a_character(chunks: list[bytes]) -> bool:
    """True when some chunk boundary falls inside a UTF-8 multibyte character."""
    for chunk in chunks:
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError:
            return True
    return False


# --- providers and requests ---------------------------------------------------------------------

Wire = Literal["chat", "responses"]
ProviderFactory = Callable[..., HttpStreamingProvider]


def simple_request(**overrides: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "model": "test-model",
        "instructions": "You are a test.",
        "tools": [ToolSpec(name="read_file", description="Read a file.",
                           parameters={"type": "object", "properties": {"path": {"type": "string"}}})],
        "messages": [Message(role=Role.USER, parts=[TextPart(text="hi")])],
    }
    fields.update(overrides)
    return ModelRequest(**fields)


async def collect(provider: HttpStreamingProvider, request: ModelRequest
                  ) -> tuple[list[ProviderEvent], ProviderError | None]:
    """All events until the end or the error; the error is returned, not raised."""
    events: list[ProviderEvent] = []
    try:
        async for event in provider.stream(request):
            events.append(event)
    except ProviderError as exc:
        return events, exc
    return events, None
