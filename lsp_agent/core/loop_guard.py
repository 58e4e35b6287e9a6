"""The loop guard: the same call with the same arguments, again and again."""

from __future__ import annotations

import json

from lsp_agent.domain import bounded_json
from lsp_agent.domain.history import ToolCallPart


def call_key(call: ToolCallPart) -> str:
    try:
        canonical = json.dumps(bounded_json.loads(call.arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except json.JSONDecodeError:
        canonical = call.arguments
    return f"{call.name}\x00{canonical}"


class LoopGuard:
    def __init__(self, warn_at: int, stop_at: int) -> None:
        self.warn_at = warn_at
        self.stop_at = stop_at
        self._last: str | None = None
        self.repeats = 0

    def observe(self, call: ToolCallPart) -> int:
        """Count this call; returns how many identical calls in a row it makes."""
        key = call_key(call)
        self.repeats = self.repeats + 1 if key == self._last else 1
        self._last = key
        return self.repeats

    def warning(self, repeats: int) -> str | None:
        if repeats < self.warn_at:
            return None
        return (f"WARNING: this is call {repeats} in a row of {self._last_name()} with the same arguments; "
                f"the result will not change. Do something different (call {self.stop_at} ends the run).")

    def tripped(self) -> bool:
        return self.repeats >= self.stop_at

    def _last_name(self) -> str:
        return (self._last or "").split("\x00", 1)[0]
