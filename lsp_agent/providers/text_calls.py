"""Tool calls written in the reply text, for servers that do not parse them into structured calls.

Many small local models write `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (the
Qwen/Hermes form) or a fenced JSON block when the server's chat template does not turn that
into `tool_calls`. With `toolCallFormat = "text"` (or `"auto"` once switched on) such blocks
become ordinary ToolCallParts and go through the same controller as native calls: an unknown
name or broken JSON is rejected there with its classified error, never guessed at here.
Only replies without structured calls are read this way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from lsp_agent.domain import bounded_json, ids
from lsp_agent.domain.history import ToolCallPart
from lsp_agent.domain.ports import AssistantReply, ModelRequest

__all__ = ["TextCall", "TextCallParser", "ToolCallFormat", "find_text_calls"]

ToolCallFormat = Literal["auto", "native", "text"]

# A tagged block (the closing tag may be missing at the very end: servers often stop on it),
# or a fenced block whose body is one JSON object.
_TAGGED = re.compile(r"<tool_call>\s*(?P<body>.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCED = re.compile(r"```(?:json|tool_call|tool)?[ \t]*\n(?P<body>\{.*?\})\s*\n?```", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"(?P<name>[^"\\]{1,200})"')


@dataclass(frozen=True, slots=True)
class TextCall:
    name: str
    #: The arguments as JSON text, or the raw block when it is not valid JSON (the controller rejects it).
    arguments: str
    #: Parsed cleanly: a JSON object with a string name and object (or JSON-string) arguments.
    valid: bool
    span: tuple[int, int]


def _call_from(body: str, span: tuple[int, int], fenced: bool) -> TextCall | None:
    try:
        data: Any = bounded_json.loads(body)
    except ValueError:
        found = _NAME.search(body)
        if fenced:
            return None  # a broken fenced block is just text; a broken tagged block is a failed call
        return TextCall(found.group("name") if found else "", body, False, span)
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None if fenced else TextCall("", body, False, span)
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            valid = isinstance(bounded_json.loads(arguments), dict)
        except ValueError:
            valid = False
        return TextCall(data["name"], arguments, valid, span)
    if fenced and "arguments" not in data and "parameters" not in data:
        return None  # a JSON example that merely has a "name" key
    valid = isinstance(arguments, dict)
    return TextCall(data["name"], json.dumps(arguments, ensure_ascii=False), valid, span)


def find_text_calls(text: str) -> list[TextCall]:
    """The tagged blocks if there are any, else the fenced ones, in order of appearance."""
    calls = [c for m in _TAGGED.finditer(text) if (c := _call_from(m.group("body"), m.span(), False))]
    if calls:
        return calls
    return [c for m in _FENCED.finditer(text) if (c := _call_from(m.group("body"), m.span(), True))]


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    pieces, last = [], 0
    for start, end in spans:
        pieces.append(text[last:start])
        last = end
    pieces.append(text[last:])
    return "".join(pieces).strip()


class TextCallParser:
    """Per provider: `native` never reads text; `text` always does; `auto` switches on at the
    first reply with a valid call to an offered tool, says so once, then behaves like `text`."""

    def __init__(self, mode: ToolCallFormat) -> None:
        self.mode = mode
        self.active = mode == "text"

    def apply(self, reply: AssistantReply, request: ModelRequest) -> AssistantReply:
        if self.mode == "native" or reply.tool_calls or not reply.text:
            return reply
        calls = find_text_calls(reply.text)
        notes = list(reply.notes)
        if not self.active:
            offered = {t.name for t in request.tools}
            if not any(c.valid and c.name in offered for c in calls):
                return reply
            self.active = True
            notes.append("the server returned tool calls as text (<tool_call> or fenced JSON); "
                         "reading them from the text from now on (toolCallFormat = \"auto\")")
        if not calls:
            return reply
        parts = [ToolCallPart(call_id=ids.new_id("call"), name=c.name, arguments=c.arguments) for c in calls]
        return reply.model_copy(update={"text": _without(reply.text, [c.span for c in calls]),
                                        "tool_calls": parts, "notes": notes})
