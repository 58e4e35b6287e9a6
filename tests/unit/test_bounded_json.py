"""The bounded JSON loader: every bound at its edge, escapes read as JSON reads them, linear time on
hostile input, and the id of a refused message still found (lsp_agent/domain/bounded_json.py)."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.domain.bounded_json import (
    MAX_DEPTH,
    JsonBounds,
    JsonTooLarge,
    check,
    loads,
    nested_deeper_than,
    top_level_scalar,
)


def _nest(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


@pytest.mark.parametrize("as_bytes", [False, True])
def test_depth_is_refused_one_level_past_the_bound(as_bytes: bool) -> None:
    def doc(text: str) -> str | bytes:
        return text.encode() if as_bytes else text

    assert loads(doc(_nest(MAX_DEPTH))) is not None
    with pytest.raises(JsonTooLarge, match=f"nested deeper than {MAX_DEPTH} levels") as caught:
        loads(doc(_nest(MAX_DEPTH + 1)))
    assert caught.value.bound == "depth"
    assert isinstance(caught.value, json.JSONDecodeError)  # every existing handler of bad JSON catches it
    with pytest.raises(JsonTooLarge):
        loads(doc('{"a":' * 100_000 + "1" + "}" * 100_000))


def test_brackets_inside_strings_do_not_count_and_escapes_are_read_as_json_reads_them() -> None:
    assert loads(json.dumps({"patch": "[" * 10_000 + "{" * 10_000})) is not None
    # an escaped quote does not end the string; an escaped backslash before a quote does
    tricky = ['"\\"' + "[" * 500 + '"', '"\\\\"', '"a\\\\\\"b"', '"\\\\\\\\"']
    for text in tricky:
        assert loads(f"[{text}, 1]") == json.loads(f"[{text}, 1]")
    with pytest.raises(JsonTooLarge):
        loads('["\\\\", ' + _nest(MAX_DEPTH) + "]")  # the string ends at the quote after `\\`


def test_the_scan_agrees_with_the_parser_on_random_documents() -> None:
    rng = random.Random(7)

    def value(depth: int) -> Any:
        roll = rng.random()
        if depth > 0 and roll < 0.3:
            return [value(depth - 1) for _ in range(rng.randint(0, 3))]
        if depth > 0 and roll < 0.6:
            return {rng.choice(['k', '"', "\\", "[", "}"]) * rng.randint(1, 3): value(depth - 1)
                    for _ in range(rng.randint(0, 3))}
        return rng.choice(["x", '"]', "\\", "\\\"[{", 1, None, True, 2.5])

    small = JsonBounds(depth=4, string_chars=1000, items=1000)
    for _ in range(2000):
        doc = json.dumps(value(rng.randint(0, 7)))
        parsed = json.loads(doc)
        deep = nested_deeper_than(parsed, 4)
        if deep:
            with pytest.raises(JsonTooLarge):
                check(doc, small)
        else:
            check(doc, small)


def test_string_and_entry_bounds() -> None:
    bounds = JsonBounds(depth=10, string_chars=5, items=3)
    assert loads('["12345", [1, 2, 3], {"a": 1, "b": 2, "c": 3}]' + " " * 200, bounds)
    with pytest.raises(JsonTooLarge, match="longer than 5 characters"):
        loads('["123456"]' + " " * 200, bounds)
    with pytest.raises(JsonTooLarge, match="more than 3 entries"):
        loads("[1, 2, 3, 4]" + " " * 200, bounds)
    with pytest.raises(JsonTooLarge, match="more than 3 entries"):
        loads('{"a": 1, "b": 2, "c": 3, "d": 4}' + " " * 200, bounds)


def test_invalid_json_is_still_the_parsers_error_and_a_huge_number_is_classified() -> None:
    for bad in ['{"a": ', '"unterminated' + "[" * 500, "]" * 500, '{"a": 1} x']:
        with pytest.raises(json.JSONDecodeError) as caught:
            loads(bad)
        assert not isinstance(caught.value, JsonTooLarge)
    with pytest.raises(JsonTooLarge, match="number is too long"):
        loads("[" + "9" * 5000 + "]")
    with pytest.raises(json.JSONDecodeError, match="not UTF-8"):
        loads(b'["\xff"]')


def test_hostile_documents_are_scanned_in_linear_time() -> None:
    # each of these would be quadratic for a scanner that searched on for a closing quote from
    # every quote, or walked every backslash run again
    n = 400_000
    for doc in ['"' + '\\"' * n, '[' + '"\\\\\\"' * n, '[' * n, '["' + "\\\\" * n + '"' + ",1" * n + "]"]:
        began = time.perf_counter()
        try:
            loads(doc)
        except json.JSONDecodeError:
            pass
        assert time.perf_counter() - began < 5.0  # about 50 ms each on an idle machine


def test_the_top_level_id_of_a_refused_message_is_found() -> None:
    deep = _nest(1000)
    body = '{"jsonrpc": "2.0", "params": {"id": 99, "x": ' + deep + '}, "id": 41, "method": "m"}'
    assert top_level_scalar(body, "id") == 41
    assert top_level_scalar(body.encode(), "id") == 41
    assert top_level_scalar('{"x": "\\"id\\": 5", "id" : "a\\"b"}', "id") == 'a"b'
    assert top_level_scalar('{"method": "m", "params": ' + deep + "}", "id") is None
    assert top_level_scalar('[{"id": 1}]', "id") is None
    assert top_level_scalar('{"id": {"nested": 1}}', "id") is None


def test_nested_deeper_than_counts_like_the_scan() -> None:
    value: Any = 1
    for _ in range(100_000):
        value = [value]
    assert nested_deeper_than(value, MAX_DEPTH)  # iterative: no RecursionError
    assert not nested_deeper_than(json.loads(_nest(MAX_DEPTH)), MAX_DEPTH)
    assert nested_deeper_than(json.loads(_nest(MAX_DEPTH + 1)), MAX_DEPTH)


def test_a_deep_package_json_and_a_deep_skill_proposal_are_refused_not_raised(tmp_path: Path) -> None:
    from lsp_agent.domain.skill_records import strict_json
    from lsp_agent.domain.skill_rules import RuleFailed
    from lsp_agent.tools.verify_detect import detect_commands

    # the repository's package.json: detection just finds no npm test
    (tmp_path / "package.json").write_text('{"scripts": {"test": "jest"}, "x": ' + _nest(20_000) + "}")
    assert all(c.argv[0] != "npm" for c in detect_commands(tmp_path))
    # the model's skill proposal (40 KB allowed: room for 20,000 levels)
    with pytest.raises(RuleFailed, match="nested deeper than"):
        strict_json('{"a": ' + _nest(20_000) + "}")


def test_a_deep_json_file_open_in_the_editor_is_not_a_skill_document() -> None:
    from lsp_agent.server.code_actions import skill_document

    deep = '{"name": "x", "evidence": {"sessionID": "s"}, "d": ' + _nest(100_000) + "}"
    assert skill_document("file:///ws/skill.json", deep, "lsp-agent-skill") is None
    shallow = '{"name": "x", "evidence": {"sessionID": "s"}}'
    assert skill_document("file:///ws/skill.json", shallow, "lsp-agent-skill") is not None
