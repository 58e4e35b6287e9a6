"""Every queue row on the wire carries the core's steerability verdict (`steerable`, `steerBlocker`),
so clients show it instead of re-deriving the rule (and deriving it differently)."""

from __future__ import annotations

from typing import Any

import pytest

from lsp_agent.core.queue import MAX_STEER_CHARS
from lsp_agent.protocol.steering import QueueItemOut


def row(**overrides: Any) -> dict[str, object]:
    base: dict[str, Any] = {"id": "que_1", "session_id": "ses_1", "kind": "follow_up", "text": "use tabs",
                            "status": "queued", "position": 1, "created_at": 1, "updated_at": 1}
    return QueueItemOut.model_validate({**base, **overrides}).wire()


@pytest.mark.parametrize("overrides", [{}, {"status": "paused"}, {"text": "x" * MAX_STEER_CHARS},
                                       {"text": f"  {'x' * MAX_STEER_CHARS}\n"}])
def test_steerable_rows_say_so_without_a_blocker(overrides: dict[str, Any]) -> None:
    wire = row(**overrides)
    assert wire["steerable"] is True and "steerBlocker" not in wire


@pytest.mark.parametrize(("overrides", "why"), [
    ({"text": "x" * (MAX_STEER_CHARS + 1)}, f"{MAX_STEER_CHARS + 1} characters"),
    ({"attachments": [{"uri": "file:///a.png"}]}, "attachments"),
    ({"kind": "command"}, "not 'command'"),
    ({"status": "sent"}, "is sent"),
    ({"status": "cancelled", "steered_into": "gen-1"}, "already steered"),
])
def test_rows_that_cannot_be_steered_say_why(overrides: dict[str, Any], why: str) -> None:
    wire = row(**overrides)
    assert wire["steerable"] is False
    assert why in str(wire["steerBlocker"])


def test_the_verdict_is_output_only() -> None:
    # A client echoing a row back cannot set the verdict: it is computed, never read.
    item = QueueItemOut.model_validate({"id": "q", "sessionID": "s", "kind": "command", "text": "t",
                                        "status": "queued", "position": 1, "createdAt": 1, "updatedAt": 1,
                                        "steerable": True})
    assert item.steerable is False
