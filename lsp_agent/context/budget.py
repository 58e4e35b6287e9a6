"""Token accounting: what a request costs and what the model can take.

Provider-reported usage wins when there is one: the last reply's `input` tokens for the
last request calibrate the character estimate (their ratio scales every later estimate).
Without a report the estimate is characters / 4, or / 3 for CJK-heavy text. Instructions
and tool schemas count too: peers that forgot them overflowed while "under budget".
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from lsp_agent.domain.appendonly import extends
from lsp_agent.domain.history import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.domain.ports import ModelRequest, ToolSpec
from lsp_agent.settings.config import Settings

__all__ = ["Budget", "Calibration", "TokenCounter", "estimate_text"]

#: Chinese, Japanese kana, Hangul, CJK compatibility and full-width forms.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
#: Above this share of CJK characters a text counts as CJK-heavy.
CJK_HEAVY = 0.3
#: Per-message framing (role, separators) a provider adds; small, but 400 messages add up.
MESSAGE_OVERHEAD = 4
#: The window assumed when neither the model nor the settings name one (the registry's default).
FALLBACK_WINDOW = 32_768


def estimate_text(text: str) -> int:
    if not text:
        return 0
    cjk = len(_CJK.findall(text)) if not text.isascii() else 0
    per_token = 3 if cjk / len(text) > CJK_HEAVY else 4
    return math.ceil(len(text) / per_token)


def _part_tokens(part: object) -> int:
    if isinstance(part, TextPart | ReasoningPart):
        return estimate_text(part.text)
    if isinstance(part, ToolCallPart):
        return estimate_text(part.name) + estimate_text(part.arguments) + 4
    if isinstance(part, ToolResultPart):
        return estimate_text(part.output) + 4
    return 0


def message_tokens(message: Message) -> int:
    return MESSAGE_OVERHEAD + sum(_part_tokens(p) for p in message.parts)


@dataclass(frozen=True)
class Budget:
    """Tokens a request may use: the window minus the output reserve, and the two thresholds."""

    window: int
    reserve: int
    fold_at: float
    compact_at: float

    @classmethod
    def of(cls, settings: Settings, model_window: int | None) -> Budget:
        config = settings.compaction
        window = config.context_window or model_window or FALLBACK_WINDOW
        # A small window must still leave room for the request itself.
        reserve = min(config.output_reserve_tokens, window // 4)
        return cls(window, reserve, config.fold_at, config.compact_at)

    @property
    def tokens(self) -> int:
        return self.window - self.reserve

    @property
    def fold_limit(self) -> int:
        return int(self.tokens * self.fold_at)

    @property
    def compact_limit(self) -> int:
        return int(self.tokens * self.compact_at)

    def share(self, tokens: int) -> float:
        return tokens / self.tokens if self.tokens else 1.0

    def wire(self) -> dict[str, int]:
        return {"window": self.window, "reserve": self.reserve, "budget": self.tokens,
                "foldAt": self.fold_limit, "compactAt": self.compact_limit}


@dataclass
class Calibration:
    """The provider's count for the last request against our estimate of it."""

    estimated: int = 0
    reported: int = 0

    def scale(self, estimate: int) -> int:
        if self.estimated <= 0 or self.reported <= 0:
            return estimate
        return math.ceil(estimate * self.reported / self.estimated)


def _estimated_texts(message: Message) -> Iterator[str]:
    """The texts of a message that `_part_tokens` estimates. isinstance checks and plain attribute
    reads: `getattr(part, "output", "")` on a part without that field takes pydantic's slow
    `__getattr__` path (an exception per miss)."""
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            yield part.output
        elif isinstance(part, TextPart | ReasoningPart):
            yield part.text
        elif isinstance(part, ToolCallPart):
            yield part.name
            yield part.arguments


def _content_size(message: Message) -> int:
    """Characters of a message's estimated texts: a folded copy (shorter output) differs from its original."""
    return sum(map(len, _estimated_texts(message)))


def _ascii(message: Message) -> bool:
    """Every text the estimate reads is ASCII (`str.isascii` reads a flag: constant time)."""
    return all(text.isascii() for text in _estimated_texts(message))


class TokenCounter:
    """Estimates requests incrementally. History is append-only, so each message is counted once
    (non-ASCII ones cached by ID and content size: a folded copy gets its own entry) and the sum over the last
    message list is kept: a request whose messages extend that list costs only its new messages.
    A fold or a compaction changes the list, and only then is it summed again (from the cache)."""

    def __init__(self) -> None:
        self._messages: dict[tuple[str, int], int] = {}
        self._static: dict[tuple[str, tuple[str, ...]], int] = {}
        #: the message list summed last (its own copy) and that sum
        self._seq: list[Message] = []
        self._seq_total = 0
        self.calibration = Calibration()

    def message(self, message: Message) -> int:
        # ASCII text is estimated from its length alone: counting it again costs what the cache
        # key would, so only messages with other text (a regex scan each) are kept (peak RSS:
        # a key tuple and an int per message of a 1,000-step run).
        if _ascii(message):
            return message_tokens(message)
        key = (message.id, _content_size(message) * 64 + len(message.parts))
        cached = self._messages.get(key)
        if cached is None:
            cached = self._messages[key] = message_tokens(message)
        return cached

    def messages(self, messages: Sequence[Message]) -> int:
        """The sum over `messages`: new ones only when they extend the list summed last (a folded
        or compacted list does not, and is summed from the cache)."""
        seq = self._seq
        if seq and extends(seq, messages):
            total = self._seq_total + sum(self.message(m) for m in messages[len(seq):])
        else:
            total = sum(self.message(m) for m in messages)
        self._seq = list(messages)
        self._seq_total = total
        return total

    def static(self, instructions: str, tools: list[ToolSpec]) -> int:
        key = (instructions, tuple(t.name for t in tools))
        cached = self._static.get(key)
        if cached is None:
            schemas = sum(estimate_text(t.name) + estimate_text(t.description)
                          + estimate_text(json.dumps(t.parameters, separators=(",", ":"))) for t in tools)
            cached = self._static[key] = estimate_text(instructions) + schemas
        return cached

    @staticmethod
    def tail(request: ModelRequest) -> int:
        return sum(estimate_text(t) + MESSAGE_OVERHEAD for t in request.tail)

    def estimate(self, request: ModelRequest) -> int:
        """The character estimate of everything sent: instructions, tool schemas, messages, tail."""
        total = self.static(request.instructions, request.tools) + self.messages(request.messages)
        return total + self.tail(request)

    def tokens(self, request: ModelRequest) -> int:
        """The best count available: the estimate scaled by the provider's last report."""
        return self.calibration.scale(self.estimate(request))

    def observe(self, estimated: int, reported: int | None) -> None:
        """The provider reported `reported` input tokens for a request we estimated at `estimated`."""
        if reported and reported > 0 and estimated > 0:
            self.calibration = Calibration(estimated, reported)
