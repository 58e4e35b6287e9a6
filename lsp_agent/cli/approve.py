"""The headless CLI's Approver: asks on a terminal, denies everywhere else.

The question goes to stderr (stdout may carry `--json` events); the answer is one line read from
stdin without a thread (a reader on the event loop), so a cancelled run never leaves a blocked
read behind. No terminal on stdin (a pipe, CI, /dev/null): every approval is denied, and said so.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TextIO

from lsp_agent.core.approval import Answer, ApprovalRequest, Decision

_CHOICES = {"o": Decision.ALLOW_ONCE, "once": Decision.ALLOW_ONCE, "y": Decision.ALLOW_ONCE,
            "yes": Decision.ALLOW_ONCE, "s": Decision.ALLOW_SESSION, "session": Decision.ALLOW_SESSION,
            "d": Decision.DENY, "deny": Decision.DENY, "n": Decision.DENY, "no": Decision.DENY}


def parse_answer(line: str) -> Decision:
    """Anything but a clear yes is a deny."""
    return _CHOICES.get(line.strip().lower(), Decision.DENY)


def question(request: ApprovalRequest) -> str:
    return (f"\nlsp-agent asks for approval: {request.tool}\n"
            f"  {request.what}\n"
            f"  why: {request.why}\n"
            f"  for this session means: {request.session_scope}\n"
            "  allow [o]nce, allow for this [s]ession, or [d]eny? (default: deny) ")


class TerminalApprover:
    def __init__(self, stdin: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.stderr = stderr or sys.stderr
        self._lock = asyncio.Lock()  # one question at a time on one terminal

    def interactive(self) -> bool:
        try:
            return self.stdin.isatty()
        except (ValueError, OSError):
            return False

    async def ask(self, request: ApprovalRequest) -> Answer:
        if not self.interactive():
            print(f"lsp-agent: denied without asking (no terminal to ask on): {request.tool}: {request.what}",
                  file=self.stderr, flush=True)
            return Answer(Decision.DENY, "cli (no terminal)")
        async with self._lock:
            print(question(request), end="", file=self.stderr, flush=True)
            line = await _read_line(self.stdin.fileno())
        if line is None:
            return Answer(Decision.DENY, "cli (end of input)")
        return Answer(parse_answer(line), "user (terminal)")


async def _read_line(fd: int) -> str | None:
    """One line from fd, read as it becomes readable; None at end of input."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[str | None] = loop.create_future()
    buffer = bytearray()

    def readable() -> None:
        try:
            chunk = os.read(fd, 1024)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            if not done.done():
                done.set_result(buffer.decode("utf-8", "replace") if buffer else None)
            return
        buffer.extend(chunk)
        if b"\n" in buffer and not done.done():
            done.set_result(buffer.split(b"\n", 1)[0].decode("utf-8", "replace"))

    loop.add_reader(fd, readable)
    try:
        return await done
    finally:
        loop.remove_reader(fd)
