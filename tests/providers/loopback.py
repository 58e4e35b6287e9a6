"""Provider test kit: a real loopback HTTP/1.1 server, body builders, provider factory.

It speaks raw HTTP over asyncio streams: each queued Reply is written with
chunked transfer encoding, one flushed write per chunk with a short pause, so
the client really receives the body in the pieces the test chose. It can also
cut the connection mid-body or stall forever, and it records every request.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lsp_agent.domain.history import Message, Role, TextPart
from lsp_agent.domain.ports import ModelRequest, ProviderError, ProviderEvent, ToolSpec
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
    #: when the reply was completely written (0.0 until then, or if it was cut or stalled)
    done_at: float = 0.0

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
        #: answer with keep-alive and serve further requests on the same connection
        self.keep_alive = False
        #: TCP connections accepted so far
        self.connections = 0
        #: answers to the discovery probes (GET /v1/models, GET /props, POST /api/show) by path;
        #: they never take a queued reply and are recorded apart, in `probes` (404 when absent)
        self.routes: dict[str, Reply] = {}
        self.probes: list[Received] = []
        #: requests whose reply has sent all its chunks and now stalls (ending="stall")
        self.stalled: list[Received] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0
        self._tls = False

    @property
    def url(self) -> str:
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}/v1"

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def start(self, tls: ssl.SSLContext | None = None) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=tls)
        self._tls = tls is not None
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
        self.connections += 1
        sock = writer.get_extra_info("socket")
        if sock is not None:
            # Explicit, not left to asyncio's default: with Nagle's algorithm on, the small chunks
            # the tests time (keep-alive comments, pieces of an event) would be held back and merged.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while await self._serve_one(reader, writer) and self.keep_alive:
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """One request and its reply; True when the reply completed (the connection may go on)."""
        request_line = await reader.readline()
        if not request_line:
            return False
        method, path, _ = request_line.decode().split(" ", 2)
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        received = Received(method, path, headers, body, time.monotonic())
        reply: Reply | None
        if method == "GET" or path.endswith("/api/show"):
            self.probes.append(received)
            reply = self.routes.get(path) or json_reply(404, {"error": {"message": "Not Found"}})
        else:
            self.requests.append(received)
            reply = self.replies.popleft() if self.replies else self.fallback
        assert reply is not None, "the test queued no reply for this request"
        head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}",
                "Transfer-Encoding: chunked", "Connection: " + ("keep-alive" if self.keep_alive else "close")]
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
            received.done_at = time.monotonic()
            return True
        if reply.ending == "stall":
            self.stalled.append(received)
            await asyncio.sleep(3600)
        return False


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


# --- scripted model turns for whole-run tests (the `lsp-agent run` subprocess, the benchmark) -----

TokenUsage = tuple[int, int, int, int]
"""(input, output, reasoning, cached) tokens, as the server reports them."""


def _chat_usage(usage: TokenUsage) -> dict[str, Any]:
    return {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1],
            "prompt_tokens_details": {"cached_tokens": usage[3]},
            "completion_tokens_details": {"reasoning_tokens": usage[2]}}


def _responses_usage(usage: TokenUsage) -> dict[str, Any]:
    return {"input_tokens": usage[0], "output_tokens": usage[1], "total_tokens": usage[0] + usage[1],
            "input_tokens_details": {"cached_tokens": usage[3]},
            "output_tokens_details": {"reasoning_tokens": usage[2]}}


def _arguments(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def chat_turn(*, text: str = "", call: tuple[str, str, dict[str, Any] | str] | None = None,
              usage: TokenUsage = (0, 0, 0, 0), done: bool = True) -> bytes:
    """One Chat Completions reply: optional text, optional tool call (call_id, name, arguments), usage.

    The arguments are streamed in two fragments, as real servers do.
    """
    chunks: list[dict[str, Any]] = [{"id": "chatcmpl-1", "choices": [
        {"index": 0, "delta": {"role": "assistant", "content": text or None}}]}]
    if call is not None:
        call_id, name, arguments = call
        raw = _arguments(arguments)
        half = len(raw) // 2
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": raw[:half]}}]}}]})
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": raw[half:]}}]}}]})
    chunks.append({"choices": [{"index": 0, "delta": {},
                                "finish_reason": "tool_calls" if call else "stop"}]})
    chunks.append({"choices": [], "usage": _chat_usage(usage)})
    return chat_sse(chunks, done=done)


def responses_turn(*, text: str = "", call: tuple[str, str, dict[str, Any] | str] | None = None,
                   usage: TokenUsage = (0, 0, 0, 0), reasoning: tuple[str, str] | None = None,
                   complete: bool = True) -> bytes:
    """One Responses reply: optional reasoning item (summary, encrypted_content), text, tool call, usage."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "resp_1"}}]
    output: list[dict[str, Any]] = []
    if reasoning is not None:
        item = {"type": "reasoning", "id": f"rs_{len(output)}", "encrypted_content": reasoning[1],
                "summary": [{"type": "summary_text", "text": reasoning[0]}]}
        events.append({"type": "response.output_item.added", "output_index": len(output),
                       "item": {**item, "summary": []}})
        events.append({"type": "response.reasoning_summary_text.delta", "output_index": len(output),
                       "summary_index": 0, "delta": reasoning[0]})
        events.append({"type": "response.output_item.done", "output_index": len(output), "item": item})
        output.append(item)
    if text:
        item = {"type": "message", "id": "msg_1", "role": "assistant",
                "content": [{"type": "output_text", "text": text}]}
        events.append({"type": "response.output_item.added", "output_index": len(output),
                       "item": {**item, "content": []}})
        events.append({"type": "response.output_text.delta", "output_index": len(output), "delta": text})
        events.append({"type": "response.output_item.done", "output_index": len(output), "item": item})
        output.append(item)
    if call is not None:
        call_id, name, arguments = call
        raw = _arguments(arguments)
        half = len(raw) // 2
        index = len(output)
        item = {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
                "arguments": raw}
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": {**item, "arguments": ""}})
        events.append({"type": "response.function_call_arguments.delta", "output_index": index,
                       "item_id": item["id"], "delta": raw[:half]})
        events.append({"type": "response.function_call_arguments.delta", "output_index": index,
                       "item_id": item["id"], "delta": raw[half:]})
        events.append({"type": "response.function_call_arguments.done", "output_index": index,
                       "item_id": item["id"], "arguments": raw})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        output.append(item)
    if complete:
        events.append({"type": "response.completed", "response": {
            "id": "resp_1", "status": "completed", "output": output, "usage": _responses_usage(usage)}})
    return responses_sse(events)


def turn(wire: Wire, *, text: str = "", call: tuple[str, str, dict[str, Any] | str] | None = None,
         usage: TokenUsage = (0, 0, 0, 0)) -> bytes:
    """A complete model turn in either wire protocol."""
    if wire == "chat":
        return chat_turn(text=text, call=call, usage=usage)
    return responses_turn(text=text, call=call, usage=usage)


def cut_inside_arguments(wire: Wire, call: tuple[str, str, dict[str, Any] | str], keep: int | None = None
                         ) -> list[bytes]:
    """Chunks of a turn that stop `keep` bytes into the tool call's arguments (default: half).

    With `keep` = the whole argument string the call looks complete, but the terminal event
    (`[DONE]` / response.completed) never comes. Serve with `ending="cut"`.
    """
    call_id, name, arguments = call
    raw = _arguments(arguments)
    keep = len(raw) // 2 if keep is None else keep
    if wire == "chat":
        chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Editing now."}}]},
                  {"choices": [{"index": 0, "delta": {"tool_calls": [
                      {"index": 0, "id": call_id, "type": "function",
                       "function": {"name": name, "arguments": raw[:keep]}}]}}]}]
        return [chat_sse(chunks, done=False)]
    item = {"type": "function_call", "id": "fc_cut", "call_id": call_id, "name": name, "arguments": ""}
    return [responses_sse([
        {"type": "response.created", "response": {"id": "resp_cut"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_cut",
         "delta": raw[:keep]},
    ])]


@dataclass
class AgentRun:
    """The outcome of one `lsp-agent run --json` subprocess."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    @property
    def finish(self) -> dict[str, Any]:
        finishes = self.of("run_finish")
        assert len(finishes) == 1, f"expected one run_finish, got {self.types()}\nstderr:\n{self.stderr}"
        return finishes[0]

    def types(self) -> list[str]:
        return [str(e.get("type")) for e in self.events]


def agent_command(prompt: str, workspace: Path, base_url: str, wire: Wire, model: str = "openai-compatible/m",
                  *extra: str) -> list[str]:
    return [sys.executable, "-m", "lsp_agent", "run", prompt, "--workspace", str(workspace),
            "--model", model, "--base-url", base_url, "--wire", wire, "--json", *extra]


async def run_agent(prompt: str, workspace: Path, base_url: str, wire: Wire, *extra: str,
                    model: str = "openai-compatible/m", env: dict[str, str] | None = None,
                    timeout_s: float = 60.0) -> AgentRun:
    """Run the real CLI in a subprocess while this event loop keeps serving the loopback server."""
    child_env = {k: v for k, v in os.environ.items() if k != "LSP_AGENT_API_KEY"}
    child_env.update(env or {})
    proc = await asyncio.create_subprocess_exec(
        *agent_command(prompt, workspace, base_url, wire, model, *extra),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=child_env)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    events = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert proc.returncode is not None
    return AgentRun(proc.returncode, events, err.decode())


def write_workspace(root: Path, files: dict[str, str], config: str = "") -> Path:
    """A workspace with these files and, when given, `.lsp-agent/config.toml`."""
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    if config:
        path = root / ".lsp-agent" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(config, encoding="utf-8")
        from tests.helpers import trust_workspace

        trust_workspace(root)  # the test's own config, trusted as its user would
    return root


def message_list(wire: Wire, body: dict[str, Any]) -> list[Any]:
    """The growing part of a request: chat `messages`, responses `input`."""
    items = body["messages" if wire == "chat" else "input"]
    assert isinstance(items, list)
    return items


def static_fields(wire: Wire, body: dict[str, Any]) -> str:
    """Everything but the growing list, serialized: must not change between requests."""
    rest = {k: v for k, v in body.items() if k != ("messages" if wire == "chat" else "input")}
    return json.dumps(rest, sort_keys=False, separators=(",", ":"), ensure_ascii=False)


def extends(previous: list[Any], current: list[Any]) -> bool:
    """True when `current` starts with every element of `previous`, unchanged (and may add more)."""
    return len(current) >= len(previous) and current[:len(previous)] == previous
