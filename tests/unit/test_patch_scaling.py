"""apply_patch work is bounded by the edit, not the file: the exact path never splits
the file into lines, and a near-miss compares a bounded number of candidate windows."""

from __future__ import annotations

import difflib

import pytest

from lsp_agent.domain.ports import Document
from lsp_agent.tools import patch_match
from lsp_agent.tools.patch import PlanFailure, Planned, plan_replacement
from lsp_agent.tools.text_edits import FileText

LINES = 30_000


def big_file() -> str:
    return "".join(f"def handler_{i}(request):\n    value = compute(request, {i})\n    return value + {i}\n"
                   for i in range(LINES))


def test_an_exact_replacement_never_splits_the_file_into_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    text = big_file()
    split = FileText.split

    def small_only(cls: type[FileText], value: str) -> FileText:
        assert len(value) < 1000, "the exact path split the whole file"
        return split(value)

    monkeypatch.setattr(FileText, "split", classmethod(small_only))
    old = f"    value = compute(request, {LINES - 3})\n"
    outcome = plan_replacement("big.py", Document(text=text), old, old.replace("compute", "recompute"))
    assert isinstance(outcome, Planned)
    (change,) = outcome.changes
    assert change.where == ((3 * (LINES - 3) + 2, 3 * (LINES - 3) + 2),)


def test_a_near_miss_compares_a_bounded_number_of_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    made = 0

    class Counting(difflib.SequenceMatcher):  # type: ignore[type-arg]
        def __init__(self, *args: object, **kwargs: object) -> None:
            nonlocal made
            made += 1
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(difflib, "SequenceMatcher", Counting)  # patch_match imports difflib when it needs it
    at = LINES - 10
    missing = (f"def handler_{at}(request):\n    value = compute(request, {at}, strict=True)\n"
               f"    return value + {at}\n")
    outcome = plan_replacement("big.py", Document(text=big_file()), missing, "pass\n")
    assert isinstance(outcome, PlanFailure) and outcome.kind == "no_match"
    assert f"at lines {3 * at + 1}-{3 * at + 3}" in outcome.message  # the closest match is found
    assert made <= patch_match.MAX_CANDIDATES


@pytest.mark.parametrize("text", ["", "x", "a\n", "a\nbb", "a\nbb\n", "\n\n", "a\n\nccc", "é\n\U0001F600\nz"])
def test_the_lf_only_span_counts_the_endings_without_walking_them(text: str) -> None:
    """`_span` of an LF-only file counts one character an ending (none for a missing final one)
    instead of summing the endings' lengths: the same lengths, for every range of lines."""
    from lsp_agent.tools.text_edits import _span

    ft = FileText.split(text)
    assert ft.lf_only
    n = len(ft.lines)
    for start in range(n + 1):
        for end in range(start, n + 1):
            expected = sum(len(line) + len(eol) for line, eol in zip(ft.lines[start:end], ft.eols[start:end],
                                                                      strict=True))
            assert _span(ft, start, end) == expected, (start, end)
    assert "".join(line + eol for line, eol in zip(ft.lines, ft.eols, strict=True)) == text
    assert not FileText.split("a\r\nb\n").lf_only
