"""Rejected calls keep their shape, not their bulk.

A call the controller refused never ran, yet its arguments stayed in the history and went out
again with every later request: one 20 MB `write_file` made every request of the session too large
to send, and no compaction could help (the call is the model's own decision, never folded). So a
refused call whose arguments are larger than `limits.rejected_args_chars` is kept as its name, its
call id and a small JSON object saying what was omitted — its size and a short preview — like a
folded observation. The provider still gets a valid pair: a call with arguments that parse as a
JSON object, and its result.

Sessions stored before this rule are repaired when they are loaded (the stored rows stay as they
are; the history the session works with is the bounded one).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from lsp_agent.domain.history import ErrorKind, Message, ToolCallPart, ToolResultPart

__all__ = ["OMITTED", "bounded_call", "bounded_history", "omitted_arguments"]

#: the key of the object that replaces omitted arguments
OMITTED = "omitted_by_lsp_agent"
PREVIEW_CHARS = 200
#: results of calls that never ran (the controller's refusals, a denial): their arguments had no effect
_NOT_RUN = frozenset({ErrorKind.INVALID_JSON, ErrorKind.PARAMETER_MISMATCH, ErrorKind.UNKNOWN_TOOL,
                      ErrorKind.PATH_DENIED, ErrorKind.DENIED})


def omitted_arguments(arguments: str) -> str:
    """A small JSON object describing `arguments`: the model sees what it sent, not all of it."""
    preview = arguments[:PREVIEW_CHARS] + ("…" if len(arguments) > PREVIEW_CHARS else "")
    return json.dumps({OMITTED: {"reason": "the call was refused; its arguments are not kept",
                                 "chars": len(arguments), "bytes": len(arguments.encode("utf-8", "surrogatepass")),
                                 "preview": preview}}, ensure_ascii=True)


def bounded_call(call: ToolCallPart, limit: int) -> ToolCallPart:
    """`call` itself when its arguments fit `limit` characters, otherwise a copy with them omitted."""
    if len(call.arguments) <= limit:
        return call
    return call.model_copy(update={"arguments": omitted_arguments(call.arguments)})


def _refused_calls(history: Sequence[Message]) -> set[tuple[int, int]]:
    """(message index, part index) of each call answered by a not-run failure. A result answers the
    latest call before it with its call id (a model may reuse ids across steps)."""
    latest: dict[str, tuple[int, int]] = {}
    refused: set[tuple[int, int]] = set()
    for m, message in enumerate(history):
        for p, part in enumerate(message.parts):
            if isinstance(part, ToolCallPart):
                latest[part.call_id] = (m, p)
            elif isinstance(part, ToolResultPart) and not part.ok and part.error_kind in _NOT_RUN:
                where = latest.get(part.call_id)
                if where is not None:
                    refused.add(where)
    return refused


def bounded_history(history: Sequence[Message], limit: int) -> list[Message]:
    """The history with every refused call's oversized arguments omitted (a loaded session; the
    messages that need no change are the same objects)."""
    out = list(history)
    for m, p in sorted(_refused_calls(history)):
        message = out[m]
        call = message.parts[p]
        assert isinstance(call, ToolCallPart)
        bounded = bounded_call(call, limit)
        if bounded is not call:
            parts = list(message.parts)
            parts[p] = bounded
            out[m] = message.model_copy(update={"parts": parts})
    return out
