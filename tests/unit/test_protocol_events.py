"""agent/event streaming: deltas coalesced per part, order kept, nothing blocks the loop."""

from __future__ import annotations

from typing import Any

from lsp_agent.domain import events
from lsp_agent.server.notify import LspEventSink


class RecordingConnection:
    """Stands in for pygls' protocol object: records what would go to the client."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.protocol = self

    def notify(self, method: str, params: Any) -> None:
        self.sent.append((method, params))


def base() -> dict[str, str]:
    return {"session_id": "ses_1", "generation": "gen_1"}


def delta(part: str, text: str, kind: type[Any] = events.TextDeltaEvent) -> Any:
    return kind(**base(), part_id=part, delta=text)


def sent_events(connection: RecordingConnection) -> list[dict[str, Any]]:
    return [params["event"] for method, params in connection.sent if method == "agent/event"]


async def test_every_event_goes_out_at_once_in_the_order_emitted() -> None:
    # The core coalesces deltas (tests/unit/test_deltas.py); the sink must not buffer them again.
    connection = RecordingConnection()
    sink = LspEventSink(connection)  # type: ignore[arg-type]
    sink.emit(delta("r1", "thinking", events.ReasoningDeltaEvent))
    assert len(connection.sent) == 1  # sent, not held for a timer
    sink.emit(delta("t1", "Hello "))
    sink.emit(delta("t1", "world"))
    sink.emit(events.TextEvent(**base(), part=events.TextPartInfo(id="t1", message_id="m1", text="Hello world")))
    sent = sent_events(connection)
    assert [(e["type"], e.get("delta")) for e in sent] == [
        ("reasoning_delta", "thinking"), ("text_delta", "Hello "), ("text_delta", "world"), ("text", None)]
    assert all(params["sessionID"] == "ses_1" and params["generation"] == "gen_1" for _, params in connection.sent)


async def test_verify_results_reach_the_observer() -> None:
    seen: list[tuple[dict[str, Any], str, str]] = []
    connection = RecordingConnection()
    sink = LspEventSink(connection, on_verify=lambda env, s, p: seen.append((env, s, p)))  # type: ignore[arg-type]
    envelope = {"status": "passed", "checks": []}
    state = events.ToolState(status="completed", input={}, output="OK", metadata={"envelope": envelope})
    sink.emit(events.ToolUse(**base(), step=1, part=events.ToolPartInfo(
        id="prt_9", message_id="m", call_id="c", tool="verify_project", state=state)))
    assert seen == [(envelope, "ses_1", "prt_9")]
