"""The running generation's cancel event, for code far below a tool call that waits on something
outside (a process, the editor's answer to applyEdit). Tools get it as `ToolContext.cancel`; this
variable remains for the process runner and the editor applier until they take it from there."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

cancel_signal: ContextVar[asyncio.Event | None] = ContextVar("cancel_signal", default=None)
