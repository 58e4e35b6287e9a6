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
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar, Protocol

import httpx

from lsp_agent.config import ProviderConfig
from lsp_agent.core.ports import (
    AssistantReply,
    ModelRequest,
    ProviderError,
    ProviderErrorKind,
    ProviderEvent,
    ReasoningDelta,
    ReplyDone,
    TextDelta,
)
from lsp_agent.providers.sse import SSEDecoder, SSEEvent

__all__ = [
    "DEFAULT_API_KEY_ENV",
    "HttpStreamingProvider",
    "ReplyAssembler",
    "StreamProblem",
    "as_dict",
    "as_int",
    "backoff_delay",
    "encode_json",
    "error_message",
    "find_error_message",
    "load_event_object",
    "parse_retry_after",
]

DEFAULT_API_KEY_ENV = "LSP_AGENT_API_KEY"
# An error body is read only this far: enough for any provider's JSON error.
_ERROR_BODY_BYTES = 64 * 1024
_MESSAGE_CHARS = 500


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
        found = find_error_message(json.loads(text))
    except ValueError:
        found = None
    return _clip(found or text)


def load_event_object(data: str) -> dict[str, Any]:
    """One event's JSON object; anything else is a malformed stream."""
    try:
        value = json.loads(data)
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
        await response.aclose()
    return bytes(buf[:_ERROR_BODY_BYTES])


class HttpStreamingProvider(ABC):
    """A Provider over one streaming HTTP endpoint; subclasses map requests and events.

    `retry_base_s`, `retry_cap_s` and `retry_after_cap_s` shape the backoff (tests pass
    tiny values); `client` lets a caller share one httpx.AsyncClient (not closed here).
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
        retry_base_s: float = 0.5,
        retry_cap_s: float = 8.0,
        retry_after_cap_s: float = 30.0,
        client: httpx.AsyncClient | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.model = model
        self.label = label or (f"{self.protocol}:{model}" if model else self.protocol)
        self.retry_base_s = retry_base_s
        self.retry_cap_s = retry_cap_s
        self.retry_after_cap_s = retry_after_cap_s
        self._rng = rng or random.Random()
        self._client = client
        self._owns_client = client is None
        self._client_loop: asyncio.AbstractEventLoop | None = None
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
        response, attempts = await self._open(body)
        assembler = self.new_assembler()
        reply: AssistantReply | None = None
        try:
            await self._reject_non_stream(response, attempts)
            decoder = SSEDecoder()
            async for chunk in response.aiter_bytes():
                for event in decoder.feed(chunk):
                    for delta in assembler.feed(event):
                        yield delta
                    if assembler.finished:
                        break
                if assembler.finished:
                    break
            else:
                for event in decoder.close():
                    for delta in assembler.feed(event):
                        yield delta
                    if assembler.finished:
                        break
            if assembler.finished:
                reply = assembler.reply()
        except httpx.ReadTimeout as exc:
            raise ProviderError(
                ProviderErrorKind.IDLE_TIMEOUT,
                f"no data from {self.url} for {self.config.idle_timeout_s:g}s mid-stream",
                attempts=attempts,
            ) from exc
        except httpx.TransportError as exc:
            raise ProviderError(
                ProviderErrorKind.STREAM_CUT,
                f"the stream broke mid-reply ({_describe(exc)})",
                attempts=attempts,
            ) from exc
        except UnicodeDecodeError as exc:
            raise ProviderError(
                ProviderErrorKind.MALFORMED, f"the stream is not UTF-8 ({exc})", attempts=attempts
            ) from exc
        except StreamProblem as exc:
            raise ProviderError(exc.kind, exc.message, attempts=attempts) from exc
        finally:
            await response.aclose()
        if reply is None:
            raise ProviderError(
                ProviderErrorKind.STREAM_CUT,
                f"the stream ended before {assembler.terminal}; the partial reply was discarded",
                attempts=attempts,
            )
        yield ReplyDone(reply=reply)

    # --- internals ----------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        key = os.environ.get(self.config.api_key_env or DEFAULT_API_KEY_ENV)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        headers.update(self.config.headers)
        return headers

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._owns_client and (self._client is None or self._client_loop is not loop):
            # Pooled connections belong to the loop that made them; a new loop needs a new pool.
            self._client = httpx.AsyncClient()
            self._client_loop = loop
        assert self._client is not None
        return self._client

    def _timeout(self) -> httpx.Timeout:
        cfg = self.config
        # The read timeout applies to every socket read: it is the idle (stall) timeout.
        return httpx.Timeout(connect=cfg.timeout_s, read=cfg.idle_timeout_s,
                             write=cfg.timeout_s, pool=cfg.timeout_s)

    async def _open(self, body: bytes) -> tuple[httpx.Response, int]:
        """Send until a 2xx status arrives; returns the open response and the attempts used."""
        client = self._http()
        attempt = 0
        while True:
            attempt += 1
            self.last_attempts = attempt
            wait: float | None = None
            try:
                request = client.build_request("POST", self.url, content=body, headers=self._headers(),
                                               timeout=self._timeout())
                response = await client.send(request, stream=True)
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
                    f"cannot reach {self.url}: {_describe(exc)}",
                    attempts=attempt,
                )
                failure.__cause__ = exc
            else:
                if response.is_success:
                    return response, attempt
                status = response.status_code
                detail = error_message(await _read_bounded(response))
                failure = ProviderError(ProviderErrorKind.HTTP_STATUS, detail, status=status,
                                        attempts=attempt)
                if status != 429 and status < 500:
                    raise failure
                retry_after = parse_retry_after(response.headers)
                if retry_after is not None:
                    wait = min(retry_after, self.retry_after_cap_s)
            if attempt > self.config.max_retries:
                raise failure
            if wait is None:
                wait = backoff_delay(attempt, self.retry_base_s, self.retry_cap_s, self._rng)
            await asyncio.sleep(wait)

    async def _reject_non_stream(self, response: httpx.Response, attempts: int) -> None:
        """A server that ignored `stream: true` answers with JSON; say so instead of 'cut'."""
        content_type = response.headers.get("content-type", "").lower()
        if content_type.startswith("application/json"):
            detail = error_message(await _read_bounded(response))
            raise ProviderError(
                ProviderErrorKind.MALFORMED,
                f"expected an event stream but got JSON: {detail}",
                status=response.status_code,
                attempts=attempts,
            )
