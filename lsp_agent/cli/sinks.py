"""Headless event sinks: JSON lines on stdout, or a readable transcript."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from lsp_agent.domain import events


class _Output:
    """stdout that may close under us (`| head -1`): the first failed write marks it closed, points
    fd 1 at /dev/null (so the interpreter's final flush cannot raise either) and calls `on_closed`
    once — the headless run cancels the generation there, which still records its run_finish."""

    def __init__(self, out: TextIO | None) -> None:
        self.out = out or sys.stdout
        self.closed = False
        self.on_closed: Callable[[], None] | None = None

    def _write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except (BrokenPipeError, ValueError):  # ValueError: the stream object itself was closed
            self._lost()

    def _lost(self) -> None:
        self.closed = True
        try:
            fd = self.out.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
        except (OSError, ValueError):
            pass
        if self.on_closed is not None:
            self.on_closed()


class JsonLinesSink(_Output):
    """One event per line (opencode's `run --format json` names); partial deltas are skipped."""

    def __init__(self, out: TextIO | None = None) -> None:
        super().__init__(out)

    def emit(self, event: Any) -> None:
        if event.type in events.DELTA_TYPES:
            return
        self._write(event.wire_json() + "\n")


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


class TranscriptSink(_Output):
    """A readable transcript on stdout and a live step indicator on stderr (when it is a terminal)."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        super().__init__(out)
        self.err = err or sys.stderr
        self.live = self.err.isatty()

    def _print(self, text: str) -> None:
        if self.live:
            self.err.write("\r\033[K")
        self._write(text + "\n")

    def _status(self, text: str) -> None:
        if self.live:
            self.err.write("\r\033[K" + text)
            self.err.flush()

    def note(self, text: str) -> None:
        """A line of the transcript that is not an event (the CLI's header)."""
        self._print(text)

    def emit(self, event: Any) -> None:
        if isinstance(event, events.StepStart):
            self._print(f"── step {event.step}/{event.max_steps}")
            self._status(f"[step {event.step}/{event.max_steps}] waiting for the model…")
        elif isinstance(event, events.ReasoningEvent):
            self._print(f"  (thinking) {_short(event.part.text)}")
        elif isinstance(event, events.TextEvent):
            self._print("  " + event.part.text.replace("\n", "\n  "))
        elif isinstance(event, events.ToolStart):
            self._status(f"[step {event.step}] running {event.part.tool}…")
        elif isinstance(event, events.ToolUse):
            state = event.part.state
            self._print(f"  → {event.part.tool} {_short(state.input, 120)}")
            first, _, rest = (state.output or "").partition("\n")
            self._print(f"    {first}" + (f"  (+{rest.count(chr(10)) + 1} lines)" if rest else ""))
        elif isinstance(event, events.NoticeEvent):
            self._print(f"  ! {event.message}")
        elif isinstance(event, events.ErrorEvent):
            self._print(f"  ✗ error: {event.error.message}")
        elif isinstance(event, events.RunFinish):
            self._print(summary_line(event))


def summary_line(result: events.RunFinish) -> str:
    check = result.verification.value
    if result.verification_citation is not None:
        cited = result.verification_citation
        check += f" (check {cited.part_id} in message {cited.message_id})"
    elif result.verification_part_id:
        check += f" (check {result.verification_part_id})"
    if result.verification_reason:
        check += f" ({result.verification_reason})"
    files = ", ".join(result.files_changed) or "none"
    t = result.tokens
    if result.previous_session_ids:
        chain = f" · session {result.session_id} (continues {', '.join(result.previous_session_ids)})"
    elif result.handoff_to:
        chain = f" · session {result.session_id} → handed off to {result.handoff_to}"
    else:
        chain = f" · session {result.session_id}"
    if t.unknown and not (t.input or t.output):
        tokens = "tokens unknown (the server reported no usage)"
    else:
        tokens = f"tokens in {t.input} out {t.output}"
        tokens += " (incomplete: some replies had no usage)" if t.unknown else ""
    return (f"── stop: {result.stop_reason.value} · verification: {check} · steps {result.steps} · "
            f"tool calls {result.tool_calls} ({result.tool_errors} errors) · {tokens} · "
            f"files changed: {files}{chain}")
