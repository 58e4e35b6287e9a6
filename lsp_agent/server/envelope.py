"""The JSON-RPC 2.0 envelope, checked before pygls sees a message.

pygls drops what it cannot classify (a missing `jsonrpc`, an object `id`, no `method`, a batch)
without answering, so a client waits forever. Here every message is either passed on or turned
into error responses — one per request whose `id` is usable, `id: null` when none is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsp_agent.domain import bounded_json

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

#: LSP's `integer` (int32); a request id outside it is not an LSP id.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

MsgId = int | str


@dataclass(frozen=True)
class Reject:
    """An error response to send: `id` None means `"id": null` (the id could not be known)."""

    id: MsgId | None
    code: int
    message: str


@dataclass(frozen=True)
class Accept:
    message: dict[str, Any]


Verdict = Accept | Reject


def usable_id(value: object) -> MsgId | None:
    """The id if it is one LSP allows (int32 or string); bool is not an int here."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and INT32_MIN <= value <= INT32_MAX:
        return value
    return None


def check_body(body: bytes) -> list[Verdict]:
    """Verdicts for one frame body: one per message (a batch is rejected element by element)."""
    try:
        value = bounded_json.loads(body)
    except bounded_json.JsonTooLarge as exc:
        # Valid JSON perhaps, but over a bound: refused before it is parsed (a deep one would
        # raise RecursionError in the parser or, shallower, in pygls' converters). A request is
        # answered by its id (read by a bounded scan), so the client does not wait forever.
        return [Reject(usable_id(bounded_json.top_level_scalar(body, "id")), INVALID_REQUEST,
                       f"Invalid Request: the message is refused: {exc.reason}")]
    except (ValueError, RecursionError):
        return [Reject(None, PARSE_ERROR, "Parse error: the frame body is not JSON")]
    if isinstance(value, list):
        # LSP has no batches (vscode-jsonrpc cannot read an array reply): every request in one gets
        # its own error response, so none of them waits forever.
        rejects = [Reject(usable_id(item.get("id")), INVALID_REQUEST,
                          "Invalid Request: batch requests are not supported; send each message on its own")
                   for item in value if isinstance(item, dict) and "id" in item and "method" in item]
        return list(rejects) or [Reject(None, INVALID_REQUEST, "Invalid Request: batches are not supported")]
    return [check_message(value)]


def check_message(value: object) -> Verdict:
    if not isinstance(value, dict):
        return Reject(None, INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    has_id = "id" in value
    msg_id = usable_id(value.get("id"))
    if has_id and msg_id is None:
        return Reject(None, INVALID_REQUEST, "Invalid Request: `id` must be a string or an int32 integer")
    if value.get("jsonrpc") != "2.0":
        return Reject(msg_id, INVALID_REQUEST, 'Invalid Request: `jsonrpc` must be "2.0"')
    if "method" not in value:
        if has_id and ("result" in value or "error" in value):
            return Accept(value)  # a response to one of our requests
        return Reject(msg_id, INVALID_REQUEST, "Invalid Request: `method` is missing")
    if not isinstance(value["method"], str) or not value["method"]:
        return Reject(msg_id, INVALID_REQUEST, "Invalid Request: `method` must be a non-empty string")
    # Params of the wrong shape are the method's to refuse (InvalidParams naming the field).
    return Accept(value)


def error_response(reject: Reject) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": reject.id, "error": {"code": reject.code, "message": reject.message}}
