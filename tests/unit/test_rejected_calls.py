"""The bounding of refused calls' arguments, alone: what is kept, what stays untouched."""

from __future__ import annotations

import json

from lsp_agent.core.rejected_calls import OMITTED, bounded_call, bounded_history, omitted_arguments
from lsp_agent.domain.history import ErrorKind, Message, Role, ToolCallPart, ToolResultPart

BIG = json.dumps({"path": "a.txt", "content": "x" * 50_000})


def _pair(call_id: str, arguments: str, ok: bool, kind: ErrorKind | None) -> list[Message]:
    return [Message(role=Role.ASSISTANT, parts=[ToolCallPart(call_id=call_id, name="write_file", arguments=arguments)]),
            Message(role=Role.TOOL, parts=[ToolResultPart(call_id=call_id, name="write_file", ok=ok, output="x",
                                                          error_kind=kind)])]


def test_omitted_arguments_are_a_small_json_object_with_size_and_preview() -> None:
    kept = json.loads(omitted_arguments(BIG))[OMITTED]
    assert kept["chars"] == len(BIG) and kept["bytes"] == len(BIG.encode())
    assert kept["preview"].startswith('{"path": "a.txt"') and len(kept["preview"]) <= 201
    assert len(omitted_arguments(BIG)) < 500


def test_arguments_within_the_bound_are_kept_as_they_are() -> None:
    call = ToolCallPart(call_id="c", name="write_file", arguments='{"path": "a"}')
    assert bounded_call(call, 2_000) is call


def test_only_refused_calls_are_bounded_even_when_a_model_reuses_call_ids() -> None:
    refused = _pair("call_0", BIG, False, ErrorKind.PARAMETER_MISMATCH)
    ran = _pair("call_0", BIG, True, None)  # the same id again, a call that ran: kept whole
    failed_running = _pair("call_1", BIG, False, ErrorKind.TOOL_FAILURE)  # it ran and failed: kept whole
    history = [*refused, *ran, *failed_running]
    out = bounded_history(history, 2_000)
    calls = [p for m in out for p in m.parts if isinstance(p, ToolCallPart)]
    assert OMITTED in json.loads(calls[0].arguments)
    assert calls[1].arguments == BIG and calls[2].arguments == BIG
    assert out[1:] == history[1:] and all(a is b for a, b in zip(out[1:], history[1:], strict=True))
    assert out[0].id == history[0].id and calls[0].id == history[0].parts[0].id  # pointers still resolve


def test_a_history_without_refusals_is_the_same_objects() -> None:
    history = _pair("c", BIG, True, None)
    assert all(a is b for a, b in zip(bounded_history(history, 10), history, strict=True))
