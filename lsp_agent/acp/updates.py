"""Core events → ACP `session/update` notifications (and `_lsp_agent/*` extension notifications).

`emit` is called by the loop and must never block it, so updates go through one ordered outbox drained
by a single task: the client sees them in the order the loop emitted them. A prompt's answer waits for
`flush()`, so every update of a turn arrives before its `session/prompt` response.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import ToolCallLocation, ToolKind

from lsp_agent.domain import events
from lsp_agent.domain.history import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

log = logging.getLogger(__name__)

#: our tools by ACP tool kind (MCP and anything unknown: "other")
KINDS: dict[str, ToolKind] = {
    "read_file": "read", "context_recover": "read", "read_skill": "read",
    "list_dir": "search", "search_code": "search", "tool_search": "search",
    "write_file": "edit", "apply_patch": "edit",
    "run_command": "execute", "verify_project": "execute",
}
#: the longest tool output copied into a tool_call_update (the model's own copy is the stored one)
MAX_OUTPUT_CHARS = 20_000


class Client(Protocol):
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None: ...

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None: ...


def tool_call_id(generation: str, call_id: str) -> str:
    """Stable per call: the permission request, the start and the result name the same tool call."""
    return f"{generation}/{call_id}"


def kind_of(tool: str) -> ToolKind:
    return KINDS.get(tool, "other")


def title_of(tool: str, args: dict[str, Any] | str) -> str:
    if isinstance(args, dict):
        argv = args.get("argv")
        if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
            return f"{tool}: {shlex.join(argv)}"[:200]
        for key in ("path", "pattern", "query", "name"):
            if isinstance(args.get(key), str):
                return f"{tool} {args[key]}"[:200]
    return tool


def _paths(args: dict[str, Any] | str, metadata: dict[str, Any] | None) -> list[str]:
    found: dict[str, None] = {}
    if isinstance(args, dict) and isinstance(args.get("path"), str):
        found[args["path"]] = None
    for key in ("written", "read"):
        value = (metadata or {}).get(key)
        if isinstance(value, list):
            found.update({p: None for p in value if isinstance(p, str)})
    return list(found)


@dataclass(frozen=True)
class Diff:
    path: str
    old: str | None
    new: str


class UpdateSink:
    """The EventSink of an ACP connection (one for every workspace it serves)."""

    def __init__(self, client: Client, take_diffs: Callable[[list[str]], list[Diff]]) -> None:
        self.client = client
        self.take_diffs = take_diffs
        self._outbox: asyncio.Queue[tuple[str, Any, dict[str, Any]] | None] = asyncio.Queue()
        self._drain = asyncio.ensure_future(self._pump())
        self._announced: set[str] = set()  # tool call ids the client has seen a `tool_call` for
        self._streamed: set[str] = set()  # text/reasoning parts sent as deltas already
        self.roots: dict[str, Path] = {}  # session → workspace root (absolute locations)

    # --- the outbox -----------------------------------------------------------------------------

    def send(self, session_id: str, update: Any) -> None:
        self._outbox.put_nowait((session_id, update, {}))

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._outbox.put_nowait((method, None, params))

    async def flush(self) -> None:
        await self._outbox.join()

    async def _pump(self) -> None:
        while True:
            item = await self._outbox.get()
            try:
                if item is None:
                    return
                target, update, params = item
                if update is None:
                    await self.client.ext_notification(target, params)
                else:
                    await self.client.session_update(target, update)
            except Exception as exc:  # a closed connection must not stop the loop or the outbox
                log.info("could not send an update: %s", exc)
            finally:
                self._outbox.task_done()

    async def aclose(self) -> None:
        self._outbox.put_nowait(None)
        try:
            await asyncio.wait_for(self._drain, timeout=5)
        except (TimeoutError, asyncio.CancelledError):
            self._drain.cancel()

    # --- EventSink ------------------------------------------------------------------------------

    def emit(self, event: events.SinkEvent) -> None:
        try:
            self._map(event)
        except Exception:  # the loop must never fail because the mapping did
            log.exception("could not map %s", getattr(event, "type", event))

    def announce(self, session_id: str, generation: str, call_id: str, tool: str, args: dict[str, Any] | str,
                 status: str = "pending") -> str:
        """A `tool_call` for a call the client has not seen yet (before a permission request)."""
        ident = tool_call_id(generation, call_id)
        if ident not in self._announced:
            self._announced.add(ident)
            self.send(session_id, start_tool_call(
                ident, title_of(tool, args), kind=kind_of(tool), status=status,  # type: ignore[arg-type]
                locations=self._locations(session_id, _paths(args, None)), raw_input=args))
        return ident

    def _locations(self, session_id: str, paths: list[str]) -> list[ToolCallLocation]:
        root = self.roots.get(session_id)
        return [ToolCallLocation(path=str(root / p) if root is not None else p) for p in paths]

    def _map(self, event: events.SinkEvent) -> None:
        if isinstance(event, events.TextDeltaEvent):
            self._streamed.add(event.part_id)
            self.send(event.session_id, update_agent_message_text(event.delta))
        elif isinstance(event, events.ReasoningDeltaEvent):
            self._streamed.add(event.part_id)
            self.send(event.session_id, update_agent_thought_text(event.delta))
        elif isinstance(event, events.TextEvent):
            if event.part.id not in self._streamed and event.part.text:
                self.send(event.session_id, update_agent_message_text(event.part.text))
            self._streamed.discard(event.part.id)
        elif isinstance(event, events.ReasoningEvent):
            if event.part.id not in self._streamed and event.part.text:
                self.send(event.session_id, update_agent_thought_text(event.part.text))
            self._streamed.discard(event.part.id)
        elif isinstance(event, events.ToolStart):
            self._tool_start(event)
        elif isinstance(event, events.ToolUse):
            self._tool_use(event)
        elif isinstance(event, events.ErrorEvent):
            self.send(event.session_id, update_agent_message_text(
                f"\n\n[lsp-agent] error ({event.error.kind}): {event.error.message}\n"))
        elif isinstance(event, events.NoticeEvent) and event.kind != "approval":
            self.send(event.session_id, update_agent_thought_text(f"[lsp-agent {event.kind}] {event.message}\n"))
        elif isinstance(event, events.ReceiptEvent):
            self.notify("lsp_agent/receipt", {"sessionId": event.session_id, "receipt": event.receipt})
        elif isinstance(event, events.QueueChangedEvent):
            self.notify("lsp_agent/queue_changed", {"sessionId": event.session_id, "items": event.items})

    def _tool_start(self, event: events.ToolStart) -> None:
        part = event.part
        ident = tool_call_id(event.generation, part.call_id)
        if ident in self._announced:
            self.send(event.session_id, update_tool_call(ident, status="in_progress"))
            return
        self.announce(event.session_id, event.generation, part.call_id, part.tool, part.state.input, "in_progress")

    def _tool_use(self, event: events.ToolUse) -> None:
        part = event.part
        ident = self.announce(event.session_id, event.generation, part.call_id, part.tool, part.state.input,
                              "in_progress")
        self._announced.discard(ident)
        state = part.state
        content: list[Any] = []
        if KINDS.get(part.tool) == "edit" and state.status == "completed":
            written = (state.metadata or {}).get("written")
            paths = [p for p in written if isinstance(p, str)] if isinstance(written, list) else []
            root = self.roots.get(event.session_id)
            for diff in self.take_diffs(paths):
                shown = str(root / diff.path) if root is not None else diff.path
                content.append(tool_diff_content(shown, diff.new, diff.old))
        output = state.output or ""
        if output:
            content.append(tool_content(text_block(output[:MAX_OUTPUT_CHARS])))
        self.send(event.session_id, update_tool_call(
            ident, status="completed" if state.status == "completed" else "failed", content=content,
            locations=self._locations(event.session_id, _paths(state.input, state.metadata)),
            raw_output={"output": output[:MAX_OUTPUT_CHARS], "errorKind": state.error_kind}))


def replay(message: Message, send: Callable[[Any], None], generation_of: Callable[[Message], str]) -> None:
    """One stored message as the updates a client would have seen live (`session/load`)."""
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.synthetic or not part.text:
                continue  # harness notes: not the user's or the model's words
            # The stored message's id: what `_lsp_agent/rewind` and `session/fork` take to name it.
            chunk = (update_user_message_text(part.text) if message.role == "user"
                     else update_agent_message_text(part.text))
            send(chunk.model_copy(update={"message_id": message.id}))
        elif isinstance(part, ReasoningPart) and part.text:
            send(update_agent_thought_text(part.text).model_copy(update={"message_id": message.id}))
        elif isinstance(part, ToolCallPart):
            ident = tool_call_id(generation_of(message), part.call_id)
            send(start_tool_call(ident, part.name, kind=kind_of(part.name), status="pending",
                                 raw_input=part.arguments))
        elif isinstance(part, ToolResultPart):
            ident = tool_call_id(generation_of(message), part.call_id)
            send(update_tool_call(ident, status="completed" if part.ok else "failed",
                                  content=[tool_content(text_block(part.output[:MAX_OUTPUT_CHARS]))]))
