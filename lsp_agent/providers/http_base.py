"""Shared plumbing of the HTTP providers: send, retry, read the SSE stream, map every failure.

The retry boundary is the response headers. Until a 2xx status arrives nothing
has been yielded, so 429, 5xx and connection failures are retried with bounded
exponential backoff (full jitter, `Retry-After` honoured up to a cap). Once the
stream has begun, any failure — a cut, a malformed event, a stall — ends the
call with a ProviderError: the reply is never completed by guessing and no
partial tool call ever leaves the provider (tool calls travel only in ReplyDone).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, ClassVar, Protocol, TypedDict
from urllib.parse import urlsplit

from lsp_agent.domain import bounded_json
from lsp_agent.domain.appendonly import extends, same_objects
from lsp_agent.domain.history import Message, ToolResultPart
from lsp_agent.domain.ports import (
    AssistantReply,
    ModelRequest,
    ProviderError,
    ProviderErrorKind,
    ProviderEvent,
    ReasoningDelta,
    ReplyDone,
    TextDelta,
)
from lsp_agent.providers import keys
from lsp_agent.providers.http_client import httpx, new_client
from lsp_agent.providers.sse import SSEDecoder, SSEEvent
from lsp_agent.providers.text_calls import TextCallParser
from lsp_agent.settings.config import ProviderConfig, Sampling

__all__ = [
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "HttpStreamingProvider",
    "OpeningCache",
    "ProviderOptions",
    "ReplyAssembler",
    "RetryPolicy",
    "StreamProblem",
    "WireCache",
    "as_dict",
    "as_int",
    "backoff_delay",
    "body_opening",
    "encode_json",
    "error_message",
    "find_error_message",
    "http_error",
    "join_body",
    "load_event_object",
    "parse_retry_after",
    "request_is_the_problem",
    "server_model",
    "valid_arguments",
]

DEFAULT_API_KEY_ENV = "LSP_AGENT_API_KEY"
#: where `ollama serve` listens unless told otherwise: a refused connection there means it is not running
OLLAMA_PORT = 11434
# An error body is read only this far: enough for any provider's JSON error.
_ERROR_BODY_BYTES = 64 * 1024
_MESSAGE_CHARS = 500
#: After the terminal event the rest of the body is read (so the connection returns to the
#: pool) for at most this long and this many bytes; a server that keeps talking is dropped.
_DRAIN_S = 1.0
_DRAIN_BYTES = 1024 * 1024
#: what a closed response's stream is replaced with (see close_response)
_CLOSED_STREAM = httpx.ByteStream(b"")
#: Output tokens asked for when neither the provider configuration nor the model says.
DEFAULT_MAX_OUTPUT_TOKENS = 4096
#: A server's model id longer than this is not a model id; it is dropped.
MAX_SERVER_MODEL_CHARS = 200


def server_model(value: Any) -> str | None:
    """The `model` a reply names, when it is a plausible id (untrusted bytes from the server)."""
    if isinstance(value, str) and 0 < len(value) <= MAX_SERVER_MODEL_CHARS and value.isprintable():
        return value
    return None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Backoff before a stream starts: full jitter from `base_s` doubling up to `cap_s`;
    a server's Retry-After is honoured up to `retry_after_cap_s` (tests pass tiny values).
    How many retries is `ProviderConfig.max_retries` (a user setting)."""

    base_s: float = 0.5
    cap_s: float = 8.0
    retry_after_cap_s: float = 30.0


class ProviderOptions(TypedDict, total=False):
    """The keyword arguments every HTTP provider takes (subclasses add their own few)."""

    model: str | None
    label: str | None
    retry: RetryPolicy
    client: httpx.AsyncClient | None
    rng: random.Random | None
    #: Output-token limit sent with every request; None: the configuration's, else 4096.
    max_output_tokens: int | None
    #: whose key an editor may have handed over (providers/keys.py)
    provider_name: str | None
    #: temperature, seed and output limit of the run; unset fields are left to the server
    sampling: Sampling | None


class StreamProblem(Exception):
    """Raised by an assembler for a malformed or failed event; the transport adds the attempt count."""

    def __init__(self, kind: ProviderErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class ReplyAssembler(Protocol):
    """Turns one wire protocol's SSE events into deltas and, at the end, one complete reply."""

    #: How the protocol marks a complete reply, for the "ended before ..." message.
    terminal: str

    @property
    def finished(self) -> bool:
        """The terminal event has arrived; nothing after it is read."""
        ...

    def feed(self, event: SSEEvent) -> list[TextDelta | ReasoningDelta]:
        """Consume one event; raise StreamProblem when it is malformed or reports a failure."""
        ...

    def reply(self) -> AssistantReply:
        """The complete reply; only called once `finished` is true."""
        ...


def encode_json(obj: Any) -> bytes:
    """Canonical request bytes: identical inputs give identical bodies (prefix caching, hashes)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def valid_arguments(arguments: str) -> str:
    """Arguments as the provider may see them again: the model's own text when it is a JSON object
    (unchanged bytes keep the prefix cache), else the raw text wrapped in one (servers such as
    llama.cpp refuse a history with invalid argument JSON). The record keeps the raw text."""
    try:
        if isinstance(bounded_json.loads(arguments), dict):
            return arguments
    except ValueError:
        pass
    return json.dumps({"unparsed_arguments": arguments}, ensure_ascii=False)


def _refs(message: Message) -> tuple[object, ...]:
    # What a message's wire form depends on, by identity: its parts, and for tool results their
    # output (folding swaps it for a placeholder in a copy of the part).
    return (message.role, *(p.output if isinstance(p, ToolResultPart) else p for p in message.parts))


class WireCache:
    """Each stored message's encoded wire items, by message id. History is append-only, so a step
    encodes only its new messages. Fast path: the leading messages that are the very objects of
    the previous call reuse its bytes without a lookup. Otherwise the same Message object is a hit;
    a copy (a folded view) is a hit when its parts are the same objects, else it is re-mapped;
    entries for messages a request no longer carries (compacted away) drop out."""

    def __init__(self) -> None:
        #: message id -> (the message last encoded under it, its items); what a copy's bytes depend on
        #: is recomputed from that message, not stored with it (a tuple less per message: peak RSS)
        self._entries: dict[str, tuple[Message, bytes]] = {}
        self._last: list[Message] = []
        #: the bytes of each message of `_last` (b"" for a message with no wire items) ...
        self._last_bytes: list[bytes] = []
        #: ... and the non-empty ones: what a body carries
        self._items: list[bytes] = []

    def encode(self, messages: list[Message], mapper: Callable[[Message], list[dict[str, Any]]]) -> list[bytes]:
        """The encoded items of `messages` (a list the cache keeps appending to: read it, don't keep it)."""
        last = self._last
        if extends(last, messages):  # the usual step: messages appended, nothing else changed
            fresh = messages[len(last):]
            last.extend(fresh)
        else:
            same, limit = 0, min(len(last), len(messages))
            while same < limit and last[same] is messages[same]:
                same += 1
            fresh = messages[same:]
            keep = {m.id for m in messages}  # something was compacted or folded: forget what is gone
            self._entries = {k: v for k, v in self._entries.items() if k in keep}
            self._last, self._last_bytes = list(messages), self._last_bytes[:same]
            self._items = [b for b in self._last_bytes if b]
        for message in fresh:
            encoded = self._lookup(message, mapper)
            self._last_bytes.append(encoded)
            if encoded:
                self._items.append(encoded)
        return self._items

    def _lookup(self, message: Message, mapper: Callable[[Message], list[dict[str, Any]]]) -> bytes:
        entry = self._entries.get(message.id)
        if entry is not None and entry[0] is message:
            return entry[1]
        if entry is not None and same_objects(_refs(entry[0]), _refs(message)):
            entry = (message, entry[1])
        else:
            entry = (message, b",".join(encode_json(item) for item in mapper(message)))
        self._entries[message.id] = entry
        return entry[1]


def body_opening(head: dict[str, Any], key: str) -> bytes:
    """The bytes of `{**head, key: [` — everything before the list's first item."""
    return encode_json(head)[:-1] + (b"," if head else b"") + encode_json(key) + b":["


def join_body(opening: bytes, items: list[bytes], tail: dict[str, Any]) -> bytes:
    """`encode_json({**head, key: [items...], **tail})` from `body_opening(head, key)` and pre-encoded
    items (byte-identical)."""
    closing = b"]" + (b"," + encode_json(tail)[1:] if tail else b"}")
    if len(items) < 2:
        return opening + (items[0] if items else b"") + closing
    # One join, one buffer: joining the items first and then the three pieces built the whole body
    # twice (two copies of hundreds of KB alive at once late in a long run, which set the peak RSS).
    return b",".join([opening + items[0], *items[1:-1], items[-1] + closing])


class OpeningCache:
    """A request body's static start — limits, tool schemas, instructions, encoded — rebuilt only when
    one of them changes: re-encoding ~10 KB of them was a fixed cost of every step. `scalars` are
    compared by value; the tool specs by identity (the registry hands out the same objects)."""

    def __init__(self) -> None:
        self._scalars: tuple[object, ...] | None = None
        self._tools: list[object] = []
        self._value: tuple[bytes, list[bytes]] = (b"", [])

    def get(self, scalars: tuple[object, ...], tools: list[Any],
            build: Callable[[], tuple[bytes, list[bytes]]]) -> tuple[bytes, list[bytes]]:
        """(the opening bytes, the encoded items that lead the list, e.g. a system message)."""
        if scalars != self._scalars or not same_objects(self._tools, tools):
            self._value = build()
            self._scalars, self._tools = scalars, list(tools)
        return self._value


def backoff_delay(attempt: int, base_s: float, cap_s: float, rng: random.Random) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2^(attempt-1))] so retrying clients spread out."""
    ceiling = min(cap_s, base_s * (2 ** max(attempt - 1, 0)))
    return rng.uniform(0.0, ceiling)


def parse_retry_after(headers: httpx.Headers, now: datetime | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` (OpenAI) or `Retry-After` (seconds or HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime  # (rare: only a date-valued Retry-After needs email)

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 3] + "..."


def find_error_message(data: Any) -> str | None:
    """The human message inside the usual error shapes (OpenAI, vLLM, Ollama, FastAPI)."""
    if isinstance(data, str):
        return data or None
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        code = error.get("code") or error.get("type")
        if isinstance(message, str) and message:
            return f"{message} ({code})" if isinstance(code, str) and code else message
    elif isinstance(error, str) and error:
        return error
    for key in ("message", "detail"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
        if value:
            return json.dumps(value, ensure_ascii=False)
    return None


def error_message(raw: bytes) -> str:
    """The provider's error message from an error body; the clipped text when it is not JSON."""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        return "(empty error body)"
    try:
        found = find_error_message(bounded_json.loads(text))
    except ValueError:
        found = None
    return _clip(found or text)


# A 5xx is normally transient, but some servers (llama.cpp) answer 500 for a request they cannot
# parse: retrying the same bytes cannot help, so such bodies fail at once.
_REQUEST_PROBLEM = re.compile(
    r"pars(e|ing)|invalid|malformed|json|exceed|context (size|length|window)|too (long|large|many)"
    r"|not supported|unsupported|validation", re.IGNORECASE)
_CONTEXT_PROBLEM = re.compile(r"context (size|length|window)|maximum context|too many tokens|exceed",
                              re.IGNORECASE)


def request_is_the_problem(status: int, detail: str) -> bool:
    """A 4xx (but 408/409/429) always; a 5xx whose message names the request (parse, context, ...)."""
    if 400 <= status < 500:
        return status not in (408, 409, 429)
    return status >= 500 and bool(_REQUEST_PROBLEM.search(detail))


def _numbers(raw: bytes) -> tuple[int | None, int | None]:
    """(prompt tokens, context) from a context-overflow body: llama.cpp's fields or OpenAI's text."""
    try:
        data = bounded_json.loads(raw)
    except ValueError:
        data = None
    error = as_dict(as_dict(data).get("error")) or as_dict(data)
    prompt, context = error.get("n_prompt_tokens"), error.get("n_ctx")
    if isinstance(prompt, int) and isinstance(context, int):
        return prompt, context
    text = raw.decode("utf-8", errors="replace")
    found_context = re.search(r"maximum context length is (\d+)|context size \((\d+) tokens\)", text)
    found_prompt = re.search(r"(?:resulted in|requested) (\d+) tokens|request \((\d+) tokens\)", text)
    return (int(next(g for g in found_prompt.groups() if g)) if found_prompt else None,
            int(next(g for g in found_context.groups() if g)) if found_context else None)


def context_hint(detail: str, raw: bytes) -> str | None:
    """For a context overflow (before the stream or reported in it): both sizes and what to change."""
    if not _CONTEXT_PROBLEM.search(detail):
        return None
    prompt, context = _numbers(raw)
    numbers = ""
    if prompt is not None or context is not None:
        shown = ["?" if n is None else str(n) for n in (prompt, context)]
        numbers = f" (prompt {shown[0]} tokens, context {shown[1]})"
    return (f"the request is larger than the server's context{numbers}: start the server with a larger "
            "context (llama-server -c N, Ollama num_ctx, vLLM --max-model-len) or set "
            "compaction.context_window to the server's size so the history is compacted in time")


def connection_hint(exc: httpx.TransportError, base_url: str) -> str:
    """For a server that could not be reached at all (refused, no such host): the usual cause is a
    local server that is not running, so say which one to start. Other transport failures (a
    connection cut mid-request) say nothing more."""
    if not isinstance(exc, httpx.ConnectError):
        return ""
    if urlsplit(base_url).port == OLLAMA_PORT:
        return " -- is `ollama serve` running?"
    return f" -- is the model server running at {base_url}? (or check the base URL)"


def _hint(status: int, detail: str, raw: bytes, url: str, base_url: str, protocol: str,
          key_env: str, editor_key: bool = False) -> str | None:
    """What the user can do about an HTTP error, where it is known."""
    if status == 404:
        if protocol == "responses":
            return ("the server may not offer the Responses API (/responses): try --wire chat "
                    "(or wire = \"chat\" in the provider's configuration)")
        if not base_url.rstrip("/").endswith("/v1"):
            return ("check the base URL: OpenAI-compatible servers usually serve under /v1 "
                    f"(try {base_url.rstrip('/')}/v1)")
        return "check the base URL and the model name"
    if status in (401, 403):
        if editor_key:
            return "the server refused the key entered in the editor for this provider: enter it again"
        if not os.environ.get(key_env):
            return f"the server wants an API key: set the environment variable {key_env} (it is unset)"
        return f"the server refused the API key in {key_env}: check it"
    if status == 405:
        return f"the server does not accept POST at {url}: check the base URL"
    return context_hint(detail, raw)


def http_error(status: int, raw: bytes, *, url: str, base_url: str, protocol: str, key_env: str,
               attempts: int, editor_key: bool = False) -> ProviderError:
    """The error for a non-2xx status: the URL, the server's message and, where known, the fix."""
    detail = error_message(raw)
    message = f"{url} answered HTTP {status}: {detail}"
    hint = _hint(status, detail, raw, url, base_url, protocol, key_env, editor_key)
    if hint:
        message += f" -- {hint}"
    return ProviderError(ProviderErrorKind.HTTP_STATUS, message, status=status, attempts=attempts)


def load_event_object(data: str) -> dict[str, Any]:
    """One event's JSON object; anything else is a malformed stream."""
    try:
        value = bounded_json.loads(data)
    except bounded_json.JsonTooLarge as exc:
        raise StreamProblem(ProviderErrorKind.MALFORMED, f"an event is refused: {exc.reason}: {_clip(data)}") from exc
    except ValueError as exc:
        raise StreamProblem(ProviderErrorKind.MALFORMED, f"an event is not valid JSON ({exc}): {_clip(data)}") from exc
    if not isinstance(value, dict):
        raise StreamProblem(ProviderErrorKind.MALFORMED, f"an event is not a JSON object: {_clip(data)}")
    return value


def as_int(value: Any) -> int:
    """A token count from usage; absent or odd values count as 0 (usage never fails a reply)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _describe(exc: BaseException) -> str:
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


async def close_response(response: httpx.Response) -> None:
    """Close `response` and break httpx's response <-> stream cycle (its BoundAsyncStream refers back
    to the response). Left to the cycle collector, every request of a run - each holding its whole
    body, hundreds of KB late in a long run - stayed alive until a full GC pass, raising the run's peak RSS."""
    await response.aclose()
    response.stream = _CLOSED_STREAM


async def _read_bounded(response: httpx.Response) -> bytes:
    buf = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            buf += chunk
            if len(buf) >= _ERROR_BODY_BYTES:
                break
    except httpx.TransportError:
        pass  # the status is the news; a body cut short still gives what arrived
    finally:
        await close_response(response)
    return bytes(buf[:_ERROR_BODY_BYTES])


class HttpStreamingProvider(ABC):
    """A Provider over one streaming HTTP endpoint; subclasses map requests and events.

    `client` lets a caller share one httpx.AsyncClient (not closed here); otherwise one
    pooled client per event loop keeps a single keep-alive connection for a whole run.
    The API key is read from the environment on every request and never kept.
    """

    scripted: bool = False
    #: Endpoint below the base URL.
    path: ClassVar[str]
    #: Wire protocol name, as in ProviderConfig.wire.
    protocol: ClassVar[str]

    def __init__(
        self,
        config: ProviderConfig,
        *,
        model: str | None = None,
        label: str | None = None,
        retry: RetryPolicy | None = None,
        client: httpx.AsyncClient | None = None,
        rng: random.Random | None = None,
        max_output_tokens: int | None = None,
        provider_name: str | None = None,
        sampling: Sampling | None = None,
    ) -> None:
        self.config = config
        self.sampling = sampling or Sampling()
        #: whose key an editor may have handed over (providers/keys.py); None: the environment only
        self.provider_name = provider_name
        self.model = model
        self.label = label or (f"{self.protocol}:{model}" if model else self.protocol)
        self.retry = retry or RetryPolicy()
        self.max_output_tokens = (self.sampling.max_output_tokens or config.max_output_tokens or max_output_tokens
                                  or DEFAULT_MAX_OUTPUT_TOKENS)
        self._rng = rng or random.Random()
        self._client = client
        self._owns_client = client is None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._text_calls = TextCallParser(config.tool_call_format)
        #: HTTP requests the latest `stream` call made (1 + retries), for replay records.
        self.last_attempts = 0

    # --- subclass hooks -----------------------------------------------------------------------

    @abstractmethod
    def encode_request(self, request: ModelRequest) -> bytes:
        """The exact request body bytes (deterministic for identical requests)."""

    @abstractmethod
    def new_assembler(self) -> ReplyAssembler:
        """A fresh per-call event assembler."""

    # --- public -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.config.base_url.rstrip("/") + self.path

    def wire_model(self, request: ModelRequest) -> str:
        """The model id sent: the one this provider was built for, else the request's."""
        return self.model or request.model

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def stream(self, request: ModelRequest, body: bytes | None = None) -> AsyncIterator[ProviderEvent]:
        if body is None:
            body = self.encode_request(request)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.request_timeout_s
        response, attempts = await self._open(body, deadline)
        assembler = self.new_assembler()
        reply: AssistantReply | None = None
        try:
            await self._reject_non_stream(response, attempts)
            decoder = SSEDecoder()
            chunks = response.aiter_bytes()
            idle_s = self.config.idle_timeout_s
            # The socket's read timeout (idle_s) restarts on any byte, so a server sending only
            # keep-alive comments would hold the run forever. Each chunk is checked on arrival
            # instead of timing each read (a timer per chunk cost 4 us): the request ends at the
            # first chunk after idle_s without data, or after its deadline; a server that goes
            # silent meanwhile hits the socket's timeout. So either ends at most idle_s late.
            quiet_until = loop.time() + idle_s
            while not assembler.finished:
                seen = decoder.substance
                chunk = await anext(chunks, None)
                if chunk is None:
                    for event in decoder.close():
                        for delta in assembler.feed(event):
                            yield delta
                        if assembler.finished:
                            break
                    break
                for event in decoder.feed(chunk):
                    for delta in assembler.feed(event):
                        yield delta
                    if assembler.finished:
                        break
                now = loop.time()
                if decoder.substance != seen:
                    quiet_until = now + idle_s
                if not assembler.finished and (now >= quiet_until or now >= deadline):
                    raise self._overdue(now >= deadline, attempts)
            if assembler.finished:
                reply = assembler.reply()
                await self._drain(chunks)
        except httpx.ReadTimeout as exc:
            raise ProviderError(
                ProviderErrorKind.IDLE_TIMEOUT,
                f"no data from {self.url} for {self.config.idle_timeout_s:g}s mid-stream",
                attempts=attempts,
            ) from exc
        except httpx.TransportError as exc:
            raise ProviderError(
                ProviderErrorKind.STREAM_CUT,
                f"the stream from {self.url} broke mid-reply ({_describe(exc)})",
                attempts=attempts,
            ) from exc
        except UnicodeDecodeError as exc:
            raise ProviderError(
                ProviderErrorKind.MALFORMED, f"the stream from {self.url} is not UTF-8 ({exc})", attempts=attempts
            ) from exc
        except StreamProblem as exc:
            reported = exc.kind is ProviderErrorKind.HTTP_STATUS  # the server's own error event
            hint = context_hint(exc.message, exc.message.encode()) if reported else None
            message = f"{exc.message} -- {hint}" if hint else exc.message
            raise ProviderError(exc.kind, message, attempts=attempts) from exc
        finally:
            await close_response(response)
        if reply is None:
            raise ProviderError(
                ProviderErrorKind.STREAM_CUT,
                f"the stream from {self.url} ended before {assembler.terminal}; the partial reply was "
                "discarded (servers that fail mid-stream, e.g. on a prompt larger than their context, "
                "log the cause)",
                attempts=attempts,
            )
        yield ReplyDone(reply=self._text_calls.apply(reply, request))

    def _overdue(self, past_deadline: bool, attempts: int) -> ProviderError:
        if past_deadline:
            message = (f"no complete reply from {self.url} within requestTimeoutS="
                       f"{self.config.request_timeout_s:g}s")
        else:
            message = (f"no data from {self.url} for {self.config.idle_timeout_s:g}s mid-stream "
                       "(keep-alive comments are not data)")
        return ProviderError(ProviderErrorKind.IDLE_TIMEOUT, message, attempts=attempts)

    async def _drain(self, chunks: AsyncIterator[bytes]) -> None:
        """Read the body to its end (bounded) so httpx can put the connection back in the pool:
        stopping at `[DONE]` before the final empty chunk made every request a new connection."""

        seen = 0
        try:
            async with asyncio.timeout(_DRAIN_S):  # in this task: wait_for made a task every request
                async for chunk in chunks:
                    seen += len(chunk)
                    if seen > _DRAIN_BYTES:
                        return
        except (TimeoutError, httpx.TransportError):
            pass  # the reply is complete; only the connection is not reused

    # --- internals ----------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        key = keys.api_key(self.provider_name, self.config.api_key_env or DEFAULT_API_KEY_ENV)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        headers.update(self.config.headers)
        return headers

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._owns_client and (self._client is None or self._client_loop is not loop):
            # Pooled connections belong to the loop that made them; a new loop needs a new pool.
            self._client = new_client(self.config.base_url)
            self._client_loop = loop
        assert self._client is not None
        return self._client

    @cached_property
    def _endpoint(self) -> httpx.URL:
        """`url`, parsed at the first request (a bad URL fails there, classified) and kept: parsing
        it was half the cost of building each request."""
        url = httpx.URL(self.url)
        if url.port is not None and not 0 < url.port < 65536:  # httpx accepts it; the socket call then
            raise httpx.InvalidURL(f"port {url.port} is out of range")  # fails unclassified (OverflowError)
        return url

    @cached_property
    def _timeouts(self) -> httpx.Timeout:
        cfg = self.config
        # The read timeout applies to every socket read: it is the idle (stall) timeout.
        return httpx.Timeout(connect=cfg.timeout_s, read=cfg.idle_timeout_s,
                             write=cfg.timeout_s, pool=cfg.timeout_s)

    async def _open(self, body: bytes, deadline: float) -> tuple[httpx.Response, int]:
        """Send until a 2xx status arrives, within the request's deadline (a loop time); returns
        the open response and the attempts used."""
        client = self._http()
        loop = asyncio.get_running_loop()
        attempt = 0
        while True:
            attempt += 1
            self.last_attempts = attempt
            wait: float | None = None
            try:
                request = client.build_request("POST", self._endpoint, content=body, headers=self._headers(),
                                               timeout=self._timeouts)
                async with asyncio.timeout_at(deadline):
                    response = await client.send(request, stream=True)
            except TimeoutError as exc:
                raise self._overdue(True, attempt) from exc
            except httpx.ReadTimeout as exc:
                # The server took the request but went silent: retrying would repeat a long stall.
                raise ProviderError(
                    ProviderErrorKind.IDLE_TIMEOUT,
                    f"{self.url} sent no response for {self.config.idle_timeout_s:g}s",
                    attempts=attempt,
                ) from exc
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                raise ProviderError(
                    ProviderErrorKind.CONFIG,
                    f"bad provider base URL {self.config.base_url!r}: {_describe(exc)}",
                    attempts=attempt,
                ) from exc
            except httpx.TransportError as exc:
                failure = ProviderError(
                    ProviderErrorKind.CONNECTION,
                    f"cannot reach {self.url}: {_describe(exc)}{connection_hint(exc, self.config.base_url)}",
                    attempts=attempt,
                )
                failure.__cause__ = exc
            else:
                if response.is_success:
                    return response, attempt
                status = response.status_code
                raw = await _read_bounded(response)
                failure = http_error(status, raw, url=self.url, base_url=self.config.base_url,
                                     protocol=self.protocol, key_env=self.config.api_key_env or DEFAULT_API_KEY_ENV,
                                     attempts=attempt, editor_key=self.provider_name is not None
                                     and keys.has_key(self.provider_name))
                if request_is_the_problem(status, error_message(raw)):
                    raise failure  # the same bytes would fail the same way
                retry_after = parse_retry_after(response.headers)
                if retry_after is not None:
                    wait = min(retry_after, self.retry.retry_after_cap_s)
            if attempt > self.config.max_retries:
                raise failure
            if wait is None:
                wait = backoff_delay(attempt, self.retry.base_s, self.retry.cap_s, self._rng)
            if loop.time() + wait >= deadline:
                raise failure  # the deadline ends the retries; the last failure says what went wrong
            await asyncio.sleep(wait)

    async def _reject_non_stream(self, response: httpx.Response, attempts: int) -> None:
        """A server that ignored `stream: true` answers with JSON; say so instead of 'cut'."""
        content_type = response.headers.get("content-type", "").lower()
        if content_type.startswith("application/json"):
            detail = error_message(await _read_bounded(response))
            raise ProviderError(
                ProviderErrorKind.MALFORMED,
                f"{self.url} answered JSON instead of an event stream: {detail}",
                status=response.status_code,
                attempts=attempts,
            )
