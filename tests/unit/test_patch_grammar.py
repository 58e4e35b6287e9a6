"""The pure part of apply_patch: grammar, matcher, edit plans, and apply_text_edits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_agent.domain.edits import Position, RenameFile, TextEdit, UpdateFile, apply_text_edits
from lsp_agent.domain.ports import Document
from lsp_agent.tools.patch import PlanFailure, Planned, plan_patch, plan_replacement
from lsp_agent.tools.patch_grammar import (
    AddOp,
    DeleteOp,
    Hunk,
    ParsedPatch,
    PatchParseError,
    UpdateOp,
    parse_patch,
)


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"


def plan(text: str, files: dict[str, str | None]) -> Planned | PlanFailure:
    docs = {p: None if t is None else Document(text=t) for p, t in files.items()}
    return plan_patch(parse_patch(text), docs)


def planned(outcome: Planned | PlanFailure) -> Planned:
    assert isinstance(outcome, Planned), outcome
    return outcome


def failed(outcome: Planned | PlanFailure) -> PlanFailure:
    assert isinstance(outcome, PlanFailure), outcome
    return outcome


def only_update(outcome: Planned | PlanFailure) -> UpdateFile:
    ops = planned(outcome).plan.ops
    assert len(ops) == 1 and isinstance(ops[0], UpdateFile)
    return ops[0]


# --- grammar -------------------------------------------------------------------------------------


def test_parses_add_delete_update_and_move_sections() -> None:
    parsed = parse_patch(patch(
        "*** Add File: new/a.py", "+x = 1", "+", "+y = 2",
        "*** Delete File: old.py",
        "*** Update File: src/b.py", "*** Move to: src/c.py", "@@ def f():", " a", "-b", "+B",
        "@@", " c", "+d", "*** End of File",
    ))
    add, delete, update = parsed.ops
    assert add == AddOp("new/a.py", "x = 1\n\ny = 2\n", 2)
    assert delete == DeleteOp("old.py", 6)
    assert isinstance(update, UpdateOp) and update.path == "src/b.py" and update.move_to == "src/c.py"
    first, second = update.hunks
    assert first.anchors == ("def f():",) and first.lines == ((" ", "a"), ("-", "b"), ("+", "B"))
    assert not first.end_of_file and second.end_of_file and second.anchors == ()
    assert parsed.paths() == ["new/a.py", "old.py", "src/b.py", "src/c.py"]


def test_is_lenient_about_surrounding_whitespace_crlf_and_missing_final_newline() -> None:
    text = "\n\n  *** Begin Patch  \r\n*** Update File:   a.py  \r\n@@\r\n-x\r\n+y\r\n*** End Patch  "
    (update,) = parse_patch(text).ops
    assert isinstance(update, UpdateOp) and update.path == "a.py"
    assert update.hunks[0].lines == (("-", "x"), ("+", "y"))


def test_accepts_a_heredoc_or_fence_wrapper() -> None:
    text = "apply_patch <<'EOF'\n" + patch("*** Delete File: a.py") + "EOF\n"
    assert parse_patch(text).paths() == ["a.py"]
    assert parse_patch("```\n" + patch("*** Delete File: a.py") + "```").paths() == ["a.py"]


def test_first_hunk_may_omit_the_at_marker_and_unified_headers_are_reduced_to_their_text() -> None:
    (update,) = parse_patch(patch("*** Update File: a.py", " a", "-b", "+c",
                                  "@@ -10,3 +10,4 @@ def g():", "-x", "+y")).ops
    assert isinstance(update, UpdateOp)
    assert update.hunks[0].anchors == () and update.hunks[1].anchors == ("def g():",)


def test_blank_lines_between_sections_are_not_context() -> None:
    (update, delete) = parse_patch(patch("*** Update File: a.py", "@@", " a", "", "-b", "+c", "",
                                         "*** Delete File: b.py")).ops
    assert isinstance(update, UpdateOp) and isinstance(delete, DeleteOp)
    assert update.hunks[0].lines == ((" ", "a"), (" ", ""), ("-", "b"), ("+", "c"))


@pytest.mark.parametrize(("text", "line", "expected"), [
    ("*** Update File: a.py\n@@\n-x\n*** End Patch", 1, "'*** Begin Patch'"),
    ("*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n", 5, "'*** End Patch'"),
    (patch("*** Update File: a.py", "@@", "-x", "oops"), 5, "starting with ' '"),
    (patch("*** Frobnicate File: a.py"), 2, "file header"),
    (patch("*** Update File: a.py"), 2, "has no hunks"),
    (patch("*** Update File: a.py", "@@"), 3, "no lines"),
    (patch("*** Add File: "), 2, "path"),
    (patch("*** Delete File: a.py", "*** Update File: a.py", "@@", "-x"), 3, "already appears"),
    ("*** Begin Patch\n*** End Patch", 2, "at least one file section"),
    ("   \n", 1, "empty"),
    (patch("*** Add File: a.py", "+x", "y"), 4, "must start with '+'"),
])
def test_parse_errors_name_the_line_and_what_was_expected(text: str, line: int, expected: str) -> None:
    with pytest.raises(PatchParseError) as info:
        parse_patch(text)
    assert info.value.line == line
    assert expected in str(info.value) and str(info.value).startswith(f"line {line}: ")


# --- matching ------------------------------------------------------------------------------------

SOURCE = "def f():\n    return 1\n\n\ndef g():\n    return 1\n"


def test_exact_match_changes_only_the_hunk() -> None:
    update = only_update(plan(patch("*** Update File: a.py", "@@", " def g():", "-    return 1", "+    return 2"),
                              {"a.py": SOURCE}))
    assert update.new_text == SOURCE.replace("return 1\n", "return 2\n").replace("return 2\n", "return 1\n", 1)
    assert update.edits == [TextEdit(start=Position(line=5, character=0), end=Position(line=6, character=0),
                                     new_text="    return 2\n")]
    assert update.base_text == SOURCE


def test_trailing_whitespace_in_the_file_is_tolerated() -> None:
    text = "a = 1   \nb = 2\t\n"
    update = only_update(plan(patch("*** Update File: a.py", "@@", " a = 1", "-b = 2", "+b = 3"), {"a.py": text}))
    assert update.new_text == "a = 1   \nb = 3\n"  # context keeps the file's own text


def test_wrong_indentation_is_tolerated_and_added_lines_are_shifted_to_match() -> None:
    text = "class A:\n    def f(self):\n        return 1\n"
    update = only_update(plan(patch("*** Update File: a.py", "@@", " def f(self):", "-    return 1",
                                    "+    x = 2", "+    return x"), {"a.py": text}))
    assert update.new_text == "class A:\n    def f(self):\n        x = 2\n        return x\n"


def test_too_much_indentation_in_the_patch_is_removed_from_added_lines() -> None:
    text = "def f():\n    return 1\n"
    update = only_update(plan(patch("*** Update File: a.py", "@@", "         def f():", "-            return 1",
                                    "+            x = 1", "+            return x"), {"a.py": text}))
    assert update.new_text == "def f():\n    x = 1\n    return x\n"


def test_unicode_punctuation_in_the_file_matches_ascii_in_the_patch() -> None:
    text = "msg = \u201chello\u201d  # it\u2019s a greeting \u2014 short\nx\u00a0= 1\n"
    update = only_update(plan(patch("*** Update File: a.py", "@@",
                                    "-msg = \"hello\"  # it's a greeting - short", "+msg = \"hi\"", " x = 1"),
                              {"a.py": text}))
    assert update.new_text == "msg = \"hi\"\nx\u00a0= 1\n"


def test_earlier_pass_wins_even_when_a_later_pass_would_match_elsewhere() -> None:
    text = "x = 1  \nx = 1\n"  # exact match only on line 2; trailing-space pass would find both
    update = only_update(plan(patch("*** Update File: a.py", "@@", "-x = 1", "+x = 2"), {"a.py": text}))
    assert update.new_text == "x = 1  \nx = 2\n"


def test_two_matches_are_an_error_with_the_count_and_line_numbers() -> None:
    failure = failed(plan(patch("*** Update File: a.py", "@@", "-    return 1", "+    return 2"), {"a.py": SOURCE}))
    assert failure.kind == "ambiguous"
    assert "matches 2 places" in failure.message and "line 2, line 6" in failure.message
    assert "more unchanged context" in failure.message


def test_an_at_context_line_picks_the_next_match_after_it() -> None:
    update = only_update(plan(patch("*** Update File: a.py", "@@ def g():", "-    return 1", "+    return 2"),
                              {"a.py": SOURCE}))
    assert update.new_text.endswith("def g():\n    return 2\n") and "return 1" in update.new_text


def test_a_missing_at_context_line_names_the_most_similar_line() -> None:
    failure = failed(plan(patch("*** Update File: a.py", "@@ def gg():", "-    return 1", "+    return 2"),
                          {"a.py": SOURCE}))
    assert failure.kind == "no_match" and "'@@ def gg():'" in failure.message
    assert "most similar is line 5" in failure.message


def test_zero_matches_explain_why_and_show_the_closest_lines_with_numbers() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 30)) + "def compute(a, b):\n    return a + b\n"
    failure = failed(plan(patch("*** Update File: a.py", "@@", "-def compute(a, c):", "-    return a + c",
                                "+def compute(a, c):", "+    return a * c"), {"a.py": text}))
    assert failure.kind == "no_match"
    message = failure.message
    assert "were not found in a.py" in message and "whitespace" in message and "changed since you read it" in message
    assert "Closest match" in message and "lines 30-31" in message
    assert "    30 | def compute(a, b):" in message
    assert "First difference: line 30 is 'def compute(a, b):'" in message
    assert "read_file (start_line=27, end_line=31)" in message


def test_hunks_out_of_file_order_are_reported_as_such() -> None:
    text = "a\nb\nc\nd\n"
    failure = failed(plan(patch("*** Update File: a.py", "@@", "-d", "+D", "@@", "-a", "+A"), {"a.py": text}))
    assert "before the previous hunk" in failure.message


def test_end_of_file_hunk_only_matches_at_the_end() -> None:
    text = "x\ny\nx\n"
    update = only_update(plan(patch("*** Update File: a.py", "@@", "-x", "+z", "*** End of File"), {"a.py": text}))
    assert update.new_text == "x\ny\nz\n"


def test_pure_addition_without_context_appends_and_with_context_inserts_after_it() -> None:
    appended = only_update(plan(patch("*** Update File: a.py", "@@", "+c"), {"a.py": "a\nb\n"}))
    assert appended.new_text == "a\nb\nc\n"
    inserted = only_update(plan(patch("*** Update File: a.py", "@@ a", "+between"), {"a.py": "a\nb\n"}))
    assert inserted.new_text == "a\nbetween\nb\n"


def test_a_trailing_blank_context_line_standing_for_the_final_newline_is_tolerated() -> None:
    update = only_update(plan(patch("*** Update File: a.py", "@@", "-b", "+c", " "), {"a.py": "a\nb\n"}))
    assert update.new_text == "a\nc\n"


# --- line endings and edits ----------------------------------------------------------------------


def test_crlf_file_stays_crlf() -> None:
    text = "one\r\ntwo\r\nthree\r\n"
    update = only_update(plan(patch("*** Update File: a.py", "@@", " one", "-two", "+2", "+2.5"), {"a.py": text}))
    assert update.new_text == "one\r\n2\r\n2.5\r\nthree\r\n"
    assert apply_text_edits(text, update.edits) == update.new_text


def test_missing_final_newline_stays_missing_when_the_last_line_is_untouched() -> None:
    update = only_update(plan(patch("*** Update File: a.py", "@@", "-a", "+A", " b"), {"a.py": "a\nb"}))
    assert update.new_text == "A\nb"


def test_changing_the_last_line_of_a_file_without_final_newline_ends_it_with_one() -> None:
    update = only_update(plan(patch("*** Update File: a.py", "@@", " a", "-b", "+B"), {"a.py": "a\nb"}))
    assert update.new_text == "a\nB\n"
    assert update.edits == [TextEdit(start=Position(line=1, character=0), end=Position(line=1, character=1),
                                     new_text="B\n")]


def test_one_line_change_in_a_hundred_line_file_is_one_single_line_edit() -> None:
    text = "".join(f"value_{i} = {i}\n" for i in range(100))
    update = only_update(plan(patch("*** Update File: m.py", "@@", " value_49 = 49", "-value_50 = 50",
                                    "+value_50 = 500", " value_51 = 51"), {"m.py": text}))
    assert update.edits == [TextEdit(start=Position(line=50, character=0), end=Position(line=51, character=0),
                                     new_text="value_50 = 500\n")]


def test_lines_rewritten_unchanged_are_left_out_of_the_edit() -> None:
    update = only_update(plan(patch("*** Update File: a.py", "@@", "-a", "-b", "-c", "+a", "+B", "+c"),
                              {"a.py": "a\nb\nc\n"}))
    assert [(e.start.line, e.end.line, e.new_text) for e in update.edits] == [(1, 2, "B\n")]


def test_each_changed_region_gets_its_own_edit() -> None:
    update = only_update(plan(patch("*** Update File: a.py", "@@", "-a", "+A", " b", "-c", "+C"),
                              {"a.py": "a\nb\nc\nd\n"}))
    assert [(e.start.line, e.end.line) for e in update.edits] == [(0, 1), (2, 3)]
    assert update.new_text == "A\nb\nC\nd\n"


def test_move_without_hunks_is_a_rename_only_and_move_with_hunks_updates_the_new_path() -> None:
    renamed = planned(plan(patch("*** Update File: a.py", "*** Move to: b.py"), {"a.py": "x\n", "b.py": None}))
    assert renamed.plan.ops == [RenameFile(path="a.py", new_path="b.py")]
    moved = planned(plan(patch("*** Update File: a.py", "*** Move to: b.py", "@@", "-x", "+y"),
                         {"a.py": "x\n", "b.py": None}))
    rename, update = moved.plan.ops
    assert isinstance(rename, RenameFile) and isinstance(update, UpdateFile)
    assert update.path == "b.py" and update.new_text == "y\n" and update.base_text == "x\n"


def test_existence_rules_for_add_update_delete_and_move() -> None:
    assert failed(plan(patch("*** Add File: a.py", "+x"), {"a.py": "old\n"})).kind == "exists"
    assert failed(plan(patch("*** Delete File: a.py"), {"a.py": None})).kind == "missing"
    assert failed(plan(patch("*** Update File: a.py", "@@", "-x"), {"a.py": None})).kind == "missing"
    moved = plan(patch("*** Update File: a.py", "*** Move to: b.py"), {"a.py": "x\n", "b.py": "y\n"})
    assert failed(moved).kind == "exists"


def test_base_version_comes_from_the_document() -> None:
    parsed = parse_patch(patch("*** Update File: a.py", "@@", "-x", "+y"))
    update = only_update(plan_patch(parsed, {"a.py": Document(text="x\n", version=7, source="buffer")}))
    assert update.base_version == 7


def test_undecodable_files_are_refused() -> None:
    failure = failed(plan(patch("*** Update File: a.bin", "@@", "-x", "+y"), {"a.bin": "x\udcff\n"}))
    assert failure.kind == "invalid" and "UTF-8" in failure.message


# --- exact replacement -----------------------------------------------------------------------------


def replace(text: str, old: str, new: str, version: int | None = None) -> Planned | PlanFailure:
    return plan_replacement("a.py", Document(text=text, version=version), old, new)


def test_exact_replacement_is_a_character_range_edit() -> None:
    update = only_update(replace("x = 1\ny = 2\n", "= 2", "= 3"))
    assert update.new_text == "x = 1\ny = 3\n"
    assert update.edits == [TextEdit(start=Position(line=1, character=2), end=Position(line=1, character=5),
                                     new_text="= 3")]


def test_exact_replacement_must_match_once() -> None:
    failure = failed(replace(SOURCE, "return 1", "return 2"))
    assert failure.kind == "ambiguous" and "2 places" in failure.message and "line 2, line 6" in failure.message


def test_exact_replacement_with_lf_text_in_a_crlf_file_keeps_crlf() -> None:
    update = only_update(replace("a\r\nb\r\nc\r\n", "b\nc\n", "B\nC\n"))
    assert update.new_text == "a\r\nB\r\nC\r\n"


def test_exact_replacement_of_one_line_with_several_in_a_crlf_file_keeps_crlf() -> None:
    update = only_update(replace("a\r\nb\r\n", "b", "b\nc"))
    assert update.new_text == "a\r\nb\r\nc\r\n"


def test_a_patch_or_replacement_that_changes_nothing_is_an_error() -> None:
    same = failed(plan(patch("*** Update File: a.py", "@@", "-a", "+a"), {"a.py": "a\n"}))
    assert same.kind == "invalid" and "changes nothing" in same.message
    assert "changes nothing" in failed(replace("x\n", "x  ", "x")).message


def test_exact_replacement_falls_back_to_tolerant_line_passes() -> None:
    update = only_update(replace("if x:\n        call(\u2018a\u2019)  \n", "    call('a')", "    call('b')"))
    assert update.new_text == "if x:\n        call('b')\n"


def test_exact_replacement_keeps_a_missing_final_newline() -> None:
    assert only_update(replace("a\nb  ", "b", "c")).new_text == "a\nc  "
    assert only_update(replace("a\n  b  ", "b  \n", "c")).new_text == "a\n  c"


def test_exact_replacement_rejects_empty_and_identical_text() -> None:
    assert "empty" in failed(replace("a\n", "", "b")).message
    assert "identical" in failed(replace("a\n", "a", "a")).message


def test_exact_replacement_zero_matches_shows_the_near_miss() -> None:
    failure = failed(replace("alpha = 1\nbeta = 2\n", "beta = 3", "beta = 4"))
    assert failure.kind == "no_match" and "line 2" in failure.message and "Re-read" in failure.message


# --- apply_text_edits: property tests --------------------------------------------------------------

_PIECES = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\r\n"),
            max_size=6),
    st.sampled_from(["\n", "\r\n", "\r", "\U0001f600", "\u00e9", "\t", "\u2028"]),
)
_TEXT = st.lists(_PIECES, max_size=25).map("".join)


def _units_and_breaks(text: str) -> tuple[list[int], list[int]]:
    """The oracle: UTF-16 code units and the unit offsets where lines start (LSP rules)."""
    raw = text.encode("utf-16-le")
    units = [int.from_bytes(raw[i:i + 2], "little") for i in range(0, len(raw), 2)]
    starts = [0]
    i = 0
    while i < len(units):
        if units[i] == 13 and i + 1 < len(units) and units[i + 1] == 10:
            starts.append(i + 2)
            i += 2
            continue
        if units[i] in (10, 13):
            starts.append(i + 1)
        i += 1
    return units, starts


def _position(starts: list[int], offset: int) -> Position:
    line = max(i for i, s in enumerate(starts) if s <= offset)
    return Position(line=line, character=offset - starts[line])


def _boundaries(text: str) -> list[int]:
    """Unit offsets an edit may start or end at: not inside a surrogate pair or a CRLF."""
    out, units = [0], 0
    for i, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if not (ch == "\r" and text[i + 1:i + 2] == "\n"):
            out.append(units)
    return out


@settings(max_examples=300, deadline=None)
@given(data=st.data(), text=_TEXT)
def test_apply_text_edits_matches_a_utf16_oracle(data: st.DataObject, text: str) -> None:
    units, starts = _units_and_breaks(text)
    cuts = sorted(data.draw(st.sets(st.sampled_from(_boundaries(text)), max_size=8)))
    spans = [(cuts[i], cuts[i + 1] if i + 1 < len(cuts) else cuts[i]) for i in range(0, len(cuts), 2)]
    spans = [(a, a if data.draw(st.booleans()) else b) for a, b in spans]
    news = [data.draw(_TEXT) for _ in spans]
    edits = [TextEdit(start=_position(starts, a), end=_position(starts, b), new_text=n)
             for (a, b), n in zip(spans, news, strict=True)]
    expected = list(units)
    for (a, b), new in sorted(zip(spans, news, strict=True), reverse=True):
        new_units, _ = _units_and_breaks(new)
        expected[a:b] = new_units
    oracle = b"".join(u.to_bytes(2, "little") for u in expected).decode("utf-16-le")
    shuffled = data.draw(st.permutations(edits))
    assert apply_text_edits(text, shuffled) == oracle


@settings(max_examples=400, deadline=None)
@given(data=st.data(), text=_TEXT)
def test_exact_replacement_edits_applied_to_the_base_give_exactly_the_new_text(data: st.DataObject,
                                                                              text: str) -> None:
    """The planner does not re-check its edits (the appliers do, at the boundary): this is the test
    that a wrong range — a CRLF widened wrongly, a surrogate pair miscounted — is caught."""
    start = data.draw(st.integers(0, len(text)))
    old = text[start:data.draw(st.integers(start, len(text)))]
    new = data.draw(_TEXT)
    outcome = plan_replacement("f.txt", Document(text=text), old, new)
    if isinstance(outcome, PlanFailure):
        return  # absent, ambiguous, empty or unchanged: nothing planned
    update = only_update(outcome)
    assert apply_text_edits(text, update.edits) == update.new_text


def test_apply_text_edits_rejects_overlaps_and_clamps_past_the_end() -> None:
    overlapping = [TextEdit(start=Position(line=0, character=0), end=Position(line=0, character=3), new_text=""),
                   TextEdit(start=Position(line=0, character=2), end=Position(line=0, character=4), new_text="")]
    with pytest.raises(ValueError, match="overlaps"):
        apply_text_edits("abcdef", overlapping)
    past = TextEdit(start=Position(line=0, character=99), end=Position(line=9, character=0), new_text="!")
    assert apply_text_edits("ab\ncd", [past]) == "ab!"


# --- hunks: property test ----------------------------------------------------------------------------

_WORD = st.text(alphabet=st.sampled_from("ab \t\u00e9\U0001f600'\u2019-"), max_size=6)


@st.composite
def _file_and_patch(draw: st.DrawFn) -> tuple[str, str, str]:
    """A file of unique lines, a random patch of non-overlapping hunks, and the text it must give."""
    count = draw(st.integers(0, 30))
    lines = [f"L{i}:{draw(_WORD)}".rstrip() for i in range(count)]
    final = draw(st.booleans()) or count == 0
    # A file without any line break gets "\n" for new lines.
    eol = draw(st.sampled_from(["\n", "\r\n"])) if count > 1 or (count and final) else "\n"
    text = "".join(line + eol for line in lines)
    if not final:
        text = text[: -len(eol)]
    regions: list[tuple[int, int, list[str]]] = []
    pos = 0
    while pos <= count and len(regions) < 4:
        start = draw(st.integers(pos, min(count, pos + 8)))
        end = draw(st.integers(start, min(count, start + 3)))
        new = [f"N{len(regions)}.{j}:{draw(_WORD)}".rstrip() for j in range(draw(st.integers(0, 3)))]
        if start == end and not new:
            new = [f"N{len(regions)}"]
        regions.append((start, end, new))
        pos = end + 5  # room for two lines of context on each side
        if draw(st.booleans()):
            break
    body: list[str] = []
    pad = draw(st.sampled_from(["", "  ", "\t"]))  # trailing whitespace the matcher must tolerate
    for start, end, new in regions:
        before = lines[max(0, start - 2):start]
        after = lines[end:end + 2]
        if not before and start == end and not after:
            before, after = [], []  # pure addition in an empty file: appended
        body += ["@@", *(" " + s + pad for s in before), *("-" + s + pad for s in lines[start:end]),
                 *("+" + s for s in new), *(" " + s + pad for s in after)]
    expected_lines: list[str] = []
    prev = 0
    for start, end, new in regions:
        expected_lines += lines[prev:start] + new
        prev = end
    expected_lines += lines[prev:]
    touches_end = any(end == count for _, end, _ in regions)
    expected = "".join(line + eol for line in expected_lines)
    if not final and not touches_end:
        expected = expected[: -len(eol)]
    return text, patch("*** Update File: f.txt", *body), expected


@settings(max_examples=300, deadline=None)
@given(case=_file_and_patch())
def test_patch_edits_applied_to_the_base_give_exactly_the_new_text(case: tuple[str, str, str]) -> None:
    text, patch_text, expected = case
    outcome = plan_patch(parse_patch(patch_text), {"f.txt": Document(text=text)})
    update = only_update(outcome)
    assert update.new_text == expected
    assert apply_text_edits(text, update.edits) == expected
    changed = sum(e.end.line - e.start.line for e in update.edits)
    assert changed <= text.count("\n") + 1  # never a whole-file rewrite for these small hunks
    if len(text.splitlines()) > 20:
        assert all(e.end.line - e.start.line <= 3 for e in update.edits)


def test_hunk_dataclass_exposes_old_lines() -> None:
    hunk = Hunk((), ((" ", "a"), ("-", "b"), ("+", "c")))
    assert hunk.old_lines == ["a", "b"]
    assert ParsedPatch((DeleteOp("x", 1),)).paths() == ["x"]
