"""Output parsers of verify_project, on output captured from real runs of each tool.

The samples were produced by running pytest 9, mypy, ruff 0.17, pyright 1.1.414 and tsc on small
projects (paths as the tools printed them); the edge cases below them are trimmed variants.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_agent.sandbox.bwrap import own_failure
from lsp_agent.tools.verify_envelope import CheckResult, Counts, Failure, VerifyEnvelope, envelope_status
from lsp_agent.tools.verify_parsers import (
    PARSERS,
    parse_generic,
    parse_mypy,
    parse_output,
    parse_pyright,
    parse_pytest,
    parse_ruff,
    parse_tsc,
    workspace_path,
)

# --- pytest ---------------------------------------------------------------------------------

PYTEST_LONG = """\
.FFEsF                                                                   [100%]
==================================== ERRORS ====================================
__________________________ ERROR at setup of test_err __________________________

    @pytest.fixture
    def broken():
>       raise RuntimeError("fixture broke")
E       RuntimeError: fixture broke

tests/test_a.py:15: RuntimeError
=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(1, 2) == 3
E       assert -1 == 3
E        +  where -1 = add(1, 2)

tests/test_a.py:8: AssertionError
__________________________________ test_raise __________________________________

    def test_raise():
>       raise ValueError("boom\\nsecond line")
E       ValueError: boom
E       second line

tests/test_a.py:11: ValueError
____________________________________ test_b ____________________________________

    def test_b():
        x = 1
>       assert x == 2, "x should be two"
E       AssertionError: x should be two
E       assert 1 == 2

tests/test_b.py:4: AssertionError
=========================== short test summary info ============================
FAILED tests/test_a.py::test_add - assert -1 == 3
FAILED tests/test_a.py::test_raise - ValueError: boom
FAILED tests/test_b.py::test_b - AssertionError: x should be two
ERROR tests/test_a.py::test_err - RuntimeError: fixture broke
3 failed, 1 passed, 1 skipped, 1 error in 0.83s
"""

# A failure raised two calls deep, in the project's own package (long traceback style).
PYTEST_DEEP_LONG = """\
.F                                                                       [100%]
=================================== FAILURES ===================================
_______________________________ TestK.test_p[2] ________________________________

self = <test_c.TestK object at 0x7f974d277f50>, v = 2

    @pytest.mark.parametrize("v", [1, 2])
    def test_p(self, v):
>       assert d.f(v)
               ^^^^^^

tests/test_c.py:8:\x20
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\x20
pkg/deep.py:2: in f
    return g(v)
           ^^^^
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\x20

v = 2

    def g(v):
        if v == 2:
>           raise KeyError(v)
E           KeyError: 2

pkg/deep.py:6: KeyError
=========================== short test summary info ============================
FAILED tests/test_c.py::TestK::test_p[2] - KeyError: 2
1 failed, 1 passed in 0.72s
"""

PYTEST_DEEP_SHORT = """\
.F                                                                       [100%]
=================================== FAILURES ===================================
_______________________________ TestK.test_p[2] ________________________________
tests/test_c.py:8: in test_p
    assert d.f(v)
           ^^^^^^
pkg/deep.py:2: in f
    return g(v)
           ^^^^
pkg/deep.py:6: in g
    raise KeyError(v)
E   KeyError: 2
=========================== short test summary info ============================
FAILED tests/test_c.py::TestK::test_p[2] - KeyError: 2
1 failed, 1 passed in 0.77s
"""

# The error is raised inside the standard library: the location is the last frame in the project.
PYTEST_OUTSIDE_FRAMES = """\
F                                                                        [100%]
=================================== FAILURES ===================================
__________________________________ test_load ___________________________________
tests/test_j.py:5: in test_load
    json.loads("{bad")
/root/.pyenv/versions/3.11.7/lib/python3.11/json/__init__.py:346: in loads
    return _default_decoder.decode(s)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^
/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py:353: in raw_decode
    obj, end = self.scan_once(s, idx)
               ^^^^^^^^^^^^^^^^^^^^^^
E   json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)
=========================== short test summary info ============================
FAILED tests/test_j.py::test_load - json.decoder.JSONDecodeError: Expecting property name enclosed in \
double quotes: line 1 column 2 (char 1)
1 failed in 0.77s
"""

PYTEST_SAME_NAMES = """\
FF                                                                       [100%]
=================================== FAILURES ===================================
__________________________________ test_same ___________________________________
a/test_x.py:2: in test_same
    assert 1 == 2
E   assert 1 == 2
__________________________________ test_same ___________________________________
b/test_y.py:2: in test_same
    assert "a" == "b"
E   AssertionError: assert 'a' == 'b'
E\x20\x20\x20\x20\x20
E     - b
E     + a
=========================== short test summary info ============================
FAILED b/test_y.py::test_same - AssertionError: assert 'a' == 'b'
FAILED a/test_x.py::test_same - assert 1 == 2
2 failed in 1.10s
"""

PYTEST_COLLECTION_ERROR = """\

==================================== ERRORS ====================================
_______________________ ERROR collecting tests/test_c.py _______________________
tests/test_c.py:4: in <module>
    class TestK:
tests/test_c.py:5: in TestK
    @pytest.mark.parametrize("v", [1, 2])
     ^^^^^^
E   NameError: name 'pytest' is not defined
=========================== short test summary info ============================
ERROR tests/test_c.py - NameError: name 'pytest' is not defined
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
1 error in 0.89s
"""

PYTEST_ALL_SKIPPED = "sx                                                                       [100%]\n" \
    "1 skipped, 1 xfailed in 0.75s\n"

# Default verbosity (no -q): the summary line is framed by '='; long runs add (h:mm:ss).
PYTEST_FRAMED = """\
tests/test_b.py F                                                        [100%]

=================================== FAILURES ===================================
____________________________________ test_b ____________________________________
tests/test_b.py:4: in test_b
    assert x == 2, "x should be two"
E   AssertionError: x should be two
=========================== short test summary info ============================
FAILED tests/test_b.py::test_b - AssertionError: x should be two
============= 1 failed, 7 passed, 2 warnings in 123.45s (0:02:03) ==============
"""


def test_pytest_long_traceback_counts_and_locations() -> None:
    parsed = parse_pytest(PYTEST_LONG)
    assert parsed.counts == Counts(passed=1, failed=3, errors=1, skipped=1)
    assert parsed.executed is True
    assert parsed.summary == "3 failed, 1 passed, 1 skipped, 1 error"
    assert [(f.file, f.line) for f in parsed.failures] == [
        ("tests/test_a.py", 8), ("tests/test_a.py", 11), ("tests/test_b.py", 4), ("tests/test_a.py", 15),
    ]
    assert parsed.failures[0].message == "tests/test_a.py::test_add: assert -1 == 3"
    assert parsed.failures[3].message == "tests/test_a.py::test_err (error): RuntimeError: fixture broke"


@pytest.mark.parametrize("sample", [PYTEST_DEEP_LONG, PYTEST_DEEP_SHORT], ids=["long", "short"])
def test_pytest_failure_points_at_the_deepest_frame_in_the_project(sample: str) -> None:
    parsed = parse_pytest(sample)
    assert parsed.failures == [
        Failure(file="pkg/deep.py", line=6, message="tests/test_c.py::TestK::test_p[2]: KeyError: 2")
    ]
    assert parsed.counts == Counts(passed=1, failed=1)


def test_pytest_frames_outside_the_workspace_are_skipped() -> None:
    parsed = parse_pytest(PYTEST_OUTSIDE_FRAMES, root="/work/proj")
    assert [(f.file, f.line) for f in parsed.failures] == [("tests/test_j.py", 5)]
    assert "Expecting property name" in parsed.failures[0].message


def test_pytest_absolute_frames_under_the_root_become_relative() -> None:
    sample = PYTEST_DEEP_SHORT.replace("pkg/deep.py:6:", "/work/proj/pkg/deep.py:6:")
    parsed = parse_pytest(sample, root="/work/proj")
    assert (parsed.failures[0].file, parsed.failures[0].line) == ("pkg/deep.py", 6)


def test_pytest_same_test_name_in_two_files_maps_to_the_right_traceback() -> None:
    parsed = parse_pytest(PYTEST_SAME_NAMES)
    assert [(f.file, f.line) for f in parsed.failures] == [("b/test_y.py", 2), ("a/test_x.py", 2)]


def test_pytest_collection_error_ran_nothing() -> None:
    parsed = parse_pytest(PYTEST_COLLECTION_ERROR)
    assert parsed.executed is False
    assert parsed.counts == Counts(errors=1)
    assert parsed.failures == [Failure(file="tests/test_c.py", line=5,
                                       message="tests/test_c.py (error): NameError: name 'pytest' is not defined")]


@pytest.mark.parametrize("sample", [PYTEST_ALL_SKIPPED, "\nno tests ran in 0.91s\n", "\n2 deselected in 0.78s\n"])
def test_pytest_nothing_executed_when_all_skipped_or_none_ran(sample: str) -> None:
    parsed = parse_pytest(sample)
    assert parsed.executed is False
    assert parsed.failures == []


def test_pytest_all_skipped_counts_xfail_as_skipped() -> None:
    assert parse_pytest(PYTEST_ALL_SKIPPED).counts == Counts(skipped=2)


def test_pytest_framed_summary_without_durations() -> None:
    parsed = parse_pytest(PYTEST_FRAMED)
    assert parsed.counts == Counts(passed=7, failed=1)
    assert parsed.summary == "1 failed, 7 passed, 2 warnings"
    assert parsed.failures[0].file == "tests/test_b.py"


def test_pytest_without_short_summary_uses_the_sections() -> None:
    sample = PYTEST_DEEP_SHORT.replace("FAILED tests/test_c.py::TestK::test_p[2] - KeyError: 2\n", "")
    parsed = parse_pytest(sample)
    assert parsed.failures == [Failure(file="pkg/deep.py", line=6, message="TestK.test_p[2]: KeyError: 2")]


def test_pytest_cut_output_without_summary_is_not_executed() -> None:
    cut = PYTEST_LONG.rsplit("\n", 2)[0]  # the closing line is lost
    parsed = parse_pytest(cut)
    assert parsed.executed is False
    assert parsed.counts == Counts(failed=3, errors=1)


def test_pytest_captured_output_is_not_taken_for_a_location() -> None:
    sample = PYTEST_DEEP_SHORT.replace(
        "E   KeyError: 2\n", "E   KeyError: 2\n----------------------------- Captured stdout call "
        "-----------------------------\nnot/a/frame.py:99: printed by the test\n")
    assert parse_pytest(sample).failures[0].file == "pkg/deep.py"


# --- mypy -----------------------------------------------------------------------------------

MYPY_ERRORS = """\
pkg/__init__.py:5: error: Incompatible return value type (got "str", expected "int")  [return-value]
pkg/__init__.py:7: error: Incompatible types in assignment (expression has type "int", variable has type \
"str")  [assignment]
tests/test_b.py:2: note: Use "-> None" if function does not return a value
Found 2 errors in 1 file (checked 2 source files)
"""

MYPY_PRETTY = """\
pkg/__init__.py:5: error: Incompatible return value type (got "str", expected
"int")  [return-value]
        return "x"
               ^~~
Found 1 error in 1 file (checked 2 source files)
"""


def test_mypy_errors_with_codes_and_counts() -> None:
    parsed = parse_mypy(MYPY_ERRORS)
    assert parsed.failures[0] == Failure(
        file="pkg/__init__.py", line=5,
        message='Incompatible return value type (got "str", expected "int") [return-value]')
    assert [f.line for f in parsed.failures] == [5, 7]  # notes are not failures
    assert parsed.counts == Counts(passed=1, failed=2)
    assert parsed.executed is True
    assert parsed.summary == "Found 2 errors in 1 file (checked 2 source files)"


def test_mypy_success_counts_checked_files() -> None:
    parsed = parse_mypy("Success: no issues found in 1 source file\n")
    assert (parsed.counts, parsed.failures, parsed.executed) == (Counts(passed=1), [], True)


def test_mypy_pretty_and_column_numbers() -> None:
    assert parse_mypy(MYPY_PRETTY).failures[0].line == 5
    columns = parse_mypy("/work/p/a.py:3:9: error: Name \"x\" is not defined  [name-defined]\n", root="/work/p")
    assert columns.failures == [Failure(file="a.py", line=3, message='Name "x" is not defined [name-defined]')]


def test_mypy_errors_that_prevented_checking_ran_nothing() -> None:
    parsed = parse_mypy("nothere: error: Cannot read file: No such file or directory\n"
                        "Found 1 error in 1 file (errors prevented further checking)\n")
    assert parsed.executed is False
    assert parsed.failures == [Failure(file=None, line=None,
                                       message="nothere: error: Cannot read file: No such file or directory")]


def test_mypy_usage_error_has_no_summary() -> None:
    parsed = parse_mypy("usage: mypy [-h] [-v] [-V] [more options; see below]\n"
                        "mypy: error: Missing target module, package, files, or command.\n")
    assert parsed.executed is False
    assert parsed.summary is None


# --- pyright --------------------------------------------------------------------------------

PYRIGHT = """\
/tmp/tsamp/pkg/__init__.py
  /tmp/tsamp/pkg/__init__.py:5:12 - error: Type "Literal['x']" is not assignable to return type "int"
    "Literal['x']" is not assignable to "int" (reportReturnType)
  /tmp/tsamp/pkg/__init__.py:7:10 - error: Type "Literal[1]" is not assignable to declared type "str"
    "Literal[1]" is not assignable to "str" (reportAssignmentType)
  /tmp/tsamp/pkg/__init__.py:9:1 - warning: Import "yaml" could not be resolved from source
2 errors, 1 warning, 0 informations\x20
"""


def test_pyright_absolute_paths_become_relative_and_warnings_do_not_fail() -> None:
    parsed = parse_pyright(PYRIGHT, root="/tmp/tsamp")
    assert [(f.file, f.line) for f in parsed.failures] == [("pkg/__init__.py", 5), ("pkg/__init__.py", 7)]
    assert parsed.failures[0].message == "Type \"Literal['x']\" is not assignable to return type \"int\""
    assert parsed.counts == Counts(failed=2)
    assert parsed.executed is True


def test_pyright_clean_run() -> None:
    parsed = parse_pyright("0 errors, 0 warnings, 0 informations \n")
    assert (parsed.failures, parsed.executed, parsed.counts) == ([], True, Counts())


# --- ruff -----------------------------------------------------------------------------------

RUFF_CONCISE = """\
tests/test_a.py:1:1: I001 [*] Import block is un-sorted or un-formatted
tests/test_b.py:1:8: F401 [*] `os` imported but unused
Found 2 errors.
[*] 2 fixable with `--fix`.
"""

RUFF_FULL = """\
F401 [*] `os` imported but unused
 --> tests/test_b.py:1:8
  |
1 | import os
  |        ^^
2 | def test_b():
3 |     x = 1
  |
help: Remove unused import: `os`
  |
  - import os
1 | def test_b():
  |

Found 1 error.
[*] 1 fixable with `--fix`.
"""


def test_ruff_concise_output() -> None:
    parsed = parse_ruff(RUFF_CONCISE)
    assert parsed.failures == [
        Failure(file="tests/test_a.py", line=1, message="I001 [*] Import block is un-sorted or un-formatted"),
        Failure(file="tests/test_b.py", line=1, message="F401 [*] `os` imported but unused"),
    ]
    assert (parsed.counts, parsed.executed, parsed.summary) == (Counts(failed=2), True, "Found 2 errors.")


def test_ruff_full_output_takes_the_message_above_the_arrow() -> None:
    parsed = parse_ruff(RUFF_FULL)
    assert parsed.failures == [Failure(file="tests/test_b.py", line=1, message="F401 [*] `os` imported but unused")]


def test_ruff_clean_and_syntax_errors() -> None:
    assert parse_ruff("All checks passed!\n").executed is True
    parsed = parse_ruff("/tmp/other/bad.py:1:7: invalid-syntax: Expected a parameter\nFound 1 error.\n",
                        root="/work/p")
    assert parsed.failures == [Failure(file=None, line=1, message="invalid-syntax: Expected a parameter")]


# --- tsc ------------------------------------------------------------------------------------

TSC_PLAIN = """\
src/a.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.
src/a.ts(2,33): error TS2322: Type 'string' is not assignable to type 'number'.
src/b.ts(1,5): error TS2322: Type 'number' is not assignable to type 'string'.
"""

TSC_PRETTY = (
    "\x1b[96msrc/a.ts\x1b[0m:\x1b[93m1\x1b[0m:\x1b[93m7\x1b[0m - \x1b[91merror\x1b[0m\x1b[90m TS2322: \x1b[0m"
    "Type 'string' is not assignable to type 'number'.\n\n\x1b[7m1\x1b[0m const x: number = \"a\";\n\n\n"
    "Found 1 error in src/a.ts\x1b[90m:1\x1b[0m\n"
)


def test_tsc_plain_and_pretty_output() -> None:
    plain = parse_tsc(TSC_PLAIN)
    assert [(f.file, f.line) for f in plain.failures] == [("src/a.ts", 1), ("src/a.ts", 2), ("src/b.ts", 1)]
    assert plain.failures[0].message == "TS2322: Type 'string' is not assignable to type 'number'."
    pretty = parse_tsc(TSC_PRETTY)
    assert pretty.failures == [Failure(file="src/a.ts", line=1,
                                       message="TS2322: Type 'string' is not assignable to type 'number'.")]
    assert pretty.summary == "Found 1 error in src/a.ts:1"


def test_tsc_silence_is_judged_by_the_exit_code() -> None:
    assert parse_tsc("").executed is None
    assert parse_output("tsc", "", 0, None).executed is True
    assert parse_output("tsc", "", None, None).executed is False
    glob = parse_tsc("error TS5058: The specified path does not exist: 'x'.\n")
    assert glob.failures == [Failure(file=None, line=None, message="TS5058: The specified path does not exist: 'x'.")]


def test_generic_parser_uses_the_exit_code_only() -> None:
    assert parse_generic("3 failed, 2 passed in 1s") .failures == []
    assert parse_output("generic", "anything", 1, None).executed is True
    assert parse_output("generic", "anything", None, None).executed is False


# --- shared pieces --------------------------------------------------------------------------


@pytest.mark.parametrize(("printed", "root", "expected"), [
    ("pkg/a.py", None, "pkg/a.py"),
    ("./pkg/../pkg/a.py", None, "pkg/a.py"),
    ("../other/a.py", "/w", None),
    ("/w/pkg/a.py", "/w", "pkg/a.py"),
    ("/elsewhere/a.py", "/w", None),
    ("/w/a.py", None, None),
    ("pkg\\win.py", None, "pkg/win.py"),
])
def test_workspace_path(printed: str, root: str | None, expected: str | None) -> None:
    assert workspace_path(printed, root) == expected


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abc.py/:0123456789 _=-E\n()FAILEDRO[]")), max_size=300))
def test_parsers_never_raise_on_arbitrary_output(text: str) -> None:
    for parse in PARSERS.values():
        parse(text, "/w")


def _check(exit_code: int | None, timed_out: bool = False) -> CheckResult:
    return CheckResult(kind="test", command=["x"], exit_code=exit_code, signal=None, timed_out=timed_out,
                       output_truncated=False, duration_ms=1, executed=True, counts=Counts(), failures=[])


def test_envelope_status_rules() -> None:
    assert envelope_status([_check(0), _check(0)], None) == "passed"
    assert envelope_status([_check(0), _check(1)], None) == "failed"
    assert envelope_status([_check(None)], None) == "failed"  # killed by a signal
    assert envelope_status([_check(1), _check(None, timed_out=True)], None) == "error"
    assert envelope_status([_check(0)], "could not start") == "error"


def test_envelope_wire_format_is_camel_case_and_round_trips() -> None:
    envelope = VerifyEnvelope(status="passed", revision="abc", clean=True, fingerprint="f", checks=[_check(0)])
    wire = envelope.to_metadata()
    assert set(wire["checks"][0]) == {"kind", "command", "exitCode", "signal", "timedOut", "outputTruncated",
                                      "durationMs", "executed", "counts", "failures"}
    assert VerifyEnvelope.model_validate(wire) == envelope


@pytest.mark.parametrize(("code", "output", "reason"), [
    (1, "bwrap: execvp ../x: No such file or directory\n", "execvp ../x: No such file or directory"),
    (1, "bwrap: Can't mkdir /nope: Read-only file system", "Can't mkdir /nope: Read-only file system"),
    (1, "bwrap: execvp ./x: No such file\nmore output\n", None),  # the program printed more: it ran
    (2, "bwrap: execvp ./x: No such file or directory\n", None),  # not bubblewrap's own status
    (1, "", None),
    (1, "bwrap:   \n", None),
])
def test_only_bubblewraps_own_failure_counts_as_never_started(code: int, output: str, reason: str | None) -> None:
    assert own_failure(code, output) == reason
