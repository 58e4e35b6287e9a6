"""Metrics from the agent's `--json` event stream, counted defensively.

The stream is untrusted bytes from a subprocess. Totals are reported only when
the whole stream was read and understood; anything else (a damaged line, a
conflicting part, a stream cut by a timeout) withholds them, because a total
over part of a run is a different, smaller number that looks like a real one.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

#: The default of `eval run --max-event-line-bytes`: a longer event line marks the stream damaged.
MAX_LINE_BYTES = 1024 * 1024
MAX_PART_IDS = 100_000
#: An agent's error message is shown on one stderr line; a longer one is cut.
_MAX_ERROR_CHARS = 300


class MetricsStatus(StrEnum):
    OBSERVED = "observed"  # the whole stream was read; totals are exact
    PARTIAL = "partial"  # events were seen but the stream is damaged or cut; totals withheld
    UNAVAILABLE = "unavailable"  # no events at all


class Damage(StrEnum):
    LINE_TOO_LONG = "line_too_long"
    MALFORMED_LINE = "malformed_line"
    CONFLICTING_PART = "conflicting_part_id"
    TOO_MANY_PARTS = "too_many_part_ids"
    NO_RUN_FINISH = "no_run_finish"  # the stream ended before the agent's final event
    INTERRUPTED = "interrupted"  # the attempt was killed (timeout or cancel)


class Metrics(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True, extra="forbid", strict=True)
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    tool_calls: int = 0
    tool_errors: int = 0


METRIC_NAMES: tuple[str, ...] = tuple(to_camel(name) for name in Metrics.model_fields)


class _Malformed(Exception):
    pass


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Malformed
    return value


def _obj(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed
    return value


def one_line(text: str, limit: int = _MAX_ERROR_CHARS) -> str:
    """Untrusted text fit for one terminal line: whitespace runs as one space, no control characters."""
    flat = " ".join(text.split())[:limit]
    return "".join(ch if ch.isprintable() else "?" for ch in flat)


class EventMeter:
    """Feed it stdout chunks of any size (one byte at a time works); then `close()` and `result()`."""

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._parts: dict[str, bytes] = {}  # part ID -> digest of the event that carried it
        self._totals = Metrics()
        self.events = 0
        self.damage: Damage | None = None
        self.finished = False  # run_finish seen
        self.stop_reason: str | None = None
        self.verification: str | None = None  # the harness's own claim in run_finish
        #: the run's own error (run_finish `error.message`), for the operator's stderr only
        self.error: str | None = None
        #: the model the provider's last reply named (step_finish `serverModel`)
        self.server_model: str | None = None

    def feed(self, chunk: bytes) -> None:
        if self.damage is not None:
            return  # totals are withheld anyway; stop spending work on the stream
        self._buffer.extend(chunk)
        while self.damage is None:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > self.max_line_bytes:
                    self._damaged(Damage.LINE_TOO_LONG)
                return
            if end > self.max_line_bytes:
                self._damaged(Damage.LINE_TOO_LONG)
                return
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            self._line(line)

    def close(self) -> None:
        """End of stream: a last line without a newline still counts (and is damaged if it was cut)."""
        if self.damage is None and self._buffer:
            line = bytes(self._buffer)
            self._buffer.clear()
            self._line(line)

    def result(self, interrupted: bool = False) -> tuple[MetricsStatus, Metrics | None, Damage | None]:
        if self.damage is None and self.events == 0:
            return MetricsStatus.UNAVAILABLE, None, None
        damage = self.damage
        if damage is None and interrupted:
            damage = Damage.INTERRUPTED
        if damage is None and not self.finished:
            damage = Damage.NO_RUN_FINISH
        if damage is not None:
            return MetricsStatus.PARTIAL, None, damage
        return MetricsStatus.OBSERVED, self._totals.model_copy(), None

    def _damaged(self, why: Damage) -> None:
        self.damage = why
        self._buffer.clear()

    def _line(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            event = _obj(json.loads(raw.decode("utf-8")))
            kind = event.get("type")
            if not isinstance(kind, str):
                raise _Malformed
            self.events += 1
            part = event.get("part")
            if part is not None and not self._first_sighting(_obj(part), event):
                return  # the same event again: count it once
            if kind == "step_finish":
                self._step_finish(_obj(part))
            elif kind == "tool_use":
                self._tool_use(_obj(part))
            elif kind == "run_finish":
                self.finished = True
                reason = event.get("stopReason")
                self.stop_reason = reason if isinstance(reason, str) else None
                claim = event.get("verification")
                self.verification = claim if claim in ("verified", "failed", "not_run") else None
                error = event.get("error")
                message = error.get("message") if isinstance(error, dict) else None
                self.error = one_line(message) if isinstance(message, str) else None
        except (_Malformed, UnicodeDecodeError, ValueError, RecursionError):
            self._damaged(Damage.MALFORMED_LINE)

    def _first_sighting(self, part: dict[str, Any], event: dict[str, Any]) -> bool:
        part_id = part.get("id")
        if not isinstance(part_id, str) or not part_id:
            raise _Malformed
        digest = hashlib.sha256(json.dumps(event, sort_keys=True, separators=(",", ":")).encode()).digest()
        known = self._parts.get(part_id)
        if known is not None:
            if known != digest:
                self._damaged(Damage.CONFLICTING_PART)
            return False
        if len(self._parts) >= MAX_PART_IDS:
            self._damaged(Damage.TOO_MANY_PARTS)
            return False
        self._parts[part_id] = digest
        return True

    def _step_finish(self, part: dict[str, Any]) -> None:
        named = part.get("serverModel")
        if isinstance(named, str) and named:
            self.server_model = one_line(named)
        tokens = _obj(part.get("tokens"))
        t = self._totals
        values = (_count(tokens.get("input")), _count(tokens.get("output")), _count(tokens.get("reasoning")),
                  _count(_obj(tokens.get("cache")).get("read")))
        t.steps += 1
        t.input_tokens += values[0]
        t.output_tokens += values[1]
        t.reasoning_tokens += values[2]
        t.cache_read_tokens += values[3]

    def _tool_use(self, part: dict[str, Any]) -> None:
        status = _obj(part.get("state")).get("status")
        if status not in ("completed", "error"):
            raise _Malformed
        self._totals.tool_calls += 1
        if status == "error":
            self._totals.tool_errors += 1
