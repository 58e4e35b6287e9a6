"""Folding, the first step of context management: fold old tool results into one-line placeholders, in batches.

Only tool results are folded — never the assistant's own words, reasoning or tool calls (its
decisions), never the last `keep_recent_messages` messages, never the latest verification
(it is the current state of the work). A batch folds everything eligible at once, so the
request prefix changes once per batch instead of a sliver at every step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lsp_agent.domain.history import Message, ToolResultPart

__all__ = ["FoldBatch", "fold_all", "fold_batch", "placeholder"]

FIRST_LINE_CHARS = 160


def _first_line(text: str) -> str:
    line = text.split("\n", 1)[0].strip()
    return line if len(line) <= FIRST_LINE_CHARS else line[:FIRST_LINE_CHARS] + "…"


def placeholder(part: ToolResultPart) -> str:
    """`[folded] read_file utils/cache.py, 340 lines — re-read if needed`, from the result's facts."""
    meta = part.metadata
    paths = [str(p) for p in (meta.get("read") or meta.get("written") or [])]
    what = part.name + (f" {', '.join(paths[:3])}" + (" …" if len(paths) > 3 else "") if paths else "")
    lines = meta.get("lines")
    if part.name == "read_file" and isinstance(lines, int):
        span = ""
        start, end = meta.get("start_line"), meta.get("end_line")
        if isinstance(start, int) and isinstance(end, int) and (start, end) != (1, lines):
            span = f" (lines {start}-{end} shown)"
        what += f", {lines} lines{span}"
        again = "re-read if needed"
    else:
        what += f": {_first_line(part.output)}"
        again = "run it again if needed" if part.name in ("run_command", "verify_project") else "redo if needed"
    return f"[folded] {what} — {len(part.output)} characters folded; {again} (part {part.id})"


@dataclass(frozen=True)
class FoldBatch:
    placeholders: dict[str, str]
    #: the view index of the first message the batch changes (the request prefix ends there)
    first_message: int
    freed_chars: int


def _latest_verification(view: Sequence[Message]) -> str | None:
    for message in reversed(view):
        for part in reversed(message.tool_results()):
            if isinstance(part.metadata.get("envelope"), dict):
                return part.id
    return None


def fold_batch(view: Sequence[Message], folded: dict[str, str], keep_recent: int, min_chars: int) -> FoldBatch:
    """Every tool result older than the last `keep_recent` messages not folded yet, at once."""
    keep = _latest_verification(view)
    placeholders: dict[str, str] = {}
    first = -1
    freed = 0
    for index, message in enumerate(view[: max(0, len(view) - keep_recent)]):
        for part in message.parts:
            if not isinstance(part, ToolResultPart) or part.id in folded or part.id == keep:
                continue
            if len(part.output) < min_chars:
                continue
            text = placeholder(part)
            if len(text) >= len(part.output):
                continue
            placeholders[part.id] = text
            freed += len(part.output) - len(text)
            if first < 0:
                first = index
    return FoldBatch(placeholders, first, freed)


def fold_all(messages: Sequence[Message]) -> list[Message]:
    """Every tool result as its placeholder (for a summary request that must fit the window)."""
    out = []
    for message in messages:
        parts = [p.model_copy(update={"output": placeholder(p)}) if isinstance(p, ToolResultPart)
                 and len(p.output) > len(placeholder(p)) else p for p in message.parts]
        out.append(message.model_copy(update={"parts": parts}))
    return out
