"""Metrics from the event stream: exact when whole, withheld when damaged, missing when absent."""

from __future__ import annotations

import json

from evalkit import HERE  # noqa: F401  (puts tests/eval on the path for fake_agent)
from fake_agent import NORMAL_TOTALS, normal_events, stream_lines

from lsp_agent.eval.metrics import MAX_LINE_BYTES, MAX_PART_IDS, Damage, EventMeter, MetricsStatus


def meter_for(data: bytes, chunk: int = 65536, interrupted: bool = False) -> tuple[str, dict[str, int] | None,
                                                                                  str | None]:
    meter = EventMeter()
    for i in range(0, len(data), chunk):
        meter.feed(data[i:i + chunk])
    meter.close()
    status, metrics, issue = meter.result(interrupted=interrupted)
    return status.value, metrics.model_dump(by_alias=True) if metrics else None, issue.value if issue else None


def joined(kind: str) -> bytes:
    return b"".join(line + b"\n" for line in stream_lines(kind))


def test_whole_stream_gives_exact_totals() -> None:
    assert meter_for(joined("normal")) == ("observed", NORMAL_TOTALS, None)


def test_stream_fed_one_byte_at_a_time_gives_the_same_totals() -> None:
    assert meter_for(joined("normal"), chunk=1) == ("observed", NORMAL_TOTALS, None)


def test_duplicate_part_ids_count_once() -> None:
    assert meter_for(joined("duplicate")) == ("observed", NORMAL_TOTALS, None)


def test_same_part_id_with_different_content_damages_the_stream() -> None:
    assert meter_for(joined("conflict")) == ("partial", None, Damage.CONFLICTING_PART.value)


def test_line_over_1_mib_damages_the_stream_even_one_byte_at_a_time() -> None:
    assert meter_for(joined("oversized")) == ("partial", None, Damage.LINE_TOO_LONG.value)
    event = {"type": "notice", "kind": "x", "message": "m" * (MAX_LINE_BYTES + 10)}
    assert meter_for(json.dumps(event).encode() + b"\n", chunk=4096)[2] == Damage.LINE_TOO_LONG.value


def test_line_of_exactly_1_mib_is_fine() -> None:
    event = {"type": "notice", "message": ""}
    pad = MAX_LINE_BYTES - len(json.dumps(event).encode())
    line = json.dumps({"type": "notice", "message": "m" * pad}).encode()
    assert len(line) == MAX_LINE_BYTES
    assert meter_for(line + b"\n" + joined("normal"))[0] == "observed"


def test_malformed_line_damages_the_stream() -> None:
    assert meter_for(joined("malformed")) == ("partial", None, Damage.MALFORMED_LINE.value)


def test_wrong_shapes_are_malformed() -> None:
    for bad in ('[1, 2]', '{"no": "type"}', '{"type": "step_finish", "part": {"id": "p", "tokens": {"input": -1}}}',
                '{"type": "tool_use", "part": {"id": "p", "state": {"status": "running"}}}', '\xff'):
        assert meter_for(bad.encode("latin-1") + b"\n")[2] == Damage.MALFORMED_LINE.value, bad


def test_more_than_100000_part_ids_damages_the_stream() -> None:
    lines = [b'{"type":"text","part":{"id":"p%d","text":""}}' % i for i in range(MAX_PART_IDS + 1)]
    assert meter_for(b"\n".join(lines) + b"\n")[2] == Damage.TOO_MANY_PARTS.value
    assert meter_for(b"\n".join(lines[:MAX_PART_IDS] + stream_lines("normal")) + b"\n")[2] \
        == Damage.TOO_MANY_PARTS.value  # 100,000 text IDs plus the normal stream's own


def test_no_events_is_unavailable_not_zero() -> None:
    assert meter_for(b"") == ("unavailable", None, None)
    assert meter_for(b"\n  \n") == ("unavailable", None, None)
    assert meter_for(b"", interrupted=True) == ("unavailable", None, None)


def test_interrupted_stream_withholds_totals() -> None:
    assert meter_for(joined("normal"), interrupted=True) == ("partial", None, Damage.INTERRUPTED.value)


def test_stream_without_run_finish_withholds_totals() -> None:
    assert meter_for(joined("no_finish")) == ("partial", None, Damage.NO_RUN_FINISH.value)


def test_last_line_without_newline_still_counts_but_a_cut_one_is_damage() -> None:
    data = joined("normal").rstrip(b"\n")
    assert meter_for(data)[0] == "observed"
    assert meter_for(data[:-5]) == ("partial", None, Damage.MALFORMED_LINE.value)


def test_unknown_event_types_are_ignored() -> None:
    extra = json.dumps({"type": "something_new", "data": 1}).encode() + b"\n"
    assert meter_for(extra + joined("normal")) == ("observed", NORMAL_TOTALS, None)


def test_stop_reason_is_read_from_run_finish() -> None:
    meter = EventMeter()
    meter.feed(joined("normal"))
    meter.close()
    assert meter.stop_reason == "final"
    assert meter.result()[0] is MetricsStatus.OBSERVED


def test_normal_events_match_the_documented_totals() -> None:
    steps = [e for e in normal_events() if e["type"] == "step_finish"]
    assert sum(e["part"]["tokens"]["input"] for e in steps) == NORMAL_TOTALS["inputTokens"]
