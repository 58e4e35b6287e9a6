"""verify_project's output parsers: pure functions over a command's output text.

Each parser turns what pytest, mypy, pyright, ruff or tsc printed into counts, failures with file
and line, and whether anything actually ran. Paths they return are workspace-relative (or None
when a location lies outside the workspace).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from lsp_agent.tools.verify_envelope import Counts, Failure

ParserName = Literal["pytest", "mypy", "pyright", "ruff", "tsc", "generic"]

MAX_MESSAGE_CHARS = 400


@dataclass
class ParsedOutput:
    counts: Counts = field(default_factory=Counts)
    failures: list[Failure] = field(default_factory=list)
    # None: the output cannot tell; the caller decides from the exit code.
    executed: bool | None = None
    summary: str | None = None  # the tool's own closing line, without timings


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _clean_lines(text: str) -> list[str]:
    return _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _message(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 3] + "..."


def workspace_path(path: str, root: str | None) -> str | None:
    """`path` as printed by a tool, made workspace-relative; None when it lies outside."""
    path = path.strip().replace("\\", "/")
    if not path:
        return None
    if path.startswith("/"):
        if not root:
            return None
        base = PurePosixPath(root.replace("\\", "/"))
        try:
            rel = PurePosixPath(path).relative_to(base)
        except ValueError:
            return None
        path = rel.as_posix()
    parts: list[str] = []
    for part in PurePosixPath(path).parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts) or None


# pytest -------------------------------------------------------------------------------------

_PYTEST_BANNER = re.compile(r"^={3,} (?P<title>.+?) ={3,}$")
_PYTEST_SECTION = re.compile(r"^_{3,} (?P<title>.+?) _{3,}$")
# A traceback location: `path:line: ExcType` (long), `path:line: in func` (short), `path:line: `.
_PYTEST_FRAME = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+):(?: .*)?$")
_PYTEST_SHORT = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<nodeid>.+?)(?: - (?P<msg>.*))?$")
_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)")
_PYTEST_SUMMARY = re.compile(
    r"^=*\s*(?P<body>(?:\d+ [a-z]+(?:, )?)+|no tests ran)\s+in\s+[\d.]+s(?:\s+\([^)]*\))?\s*=*$"
)


@dataclass
class _Section:
    kind: str  # "failed" | "error"
    name: str
    frames: list[tuple[str, int]] = field(default_factory=list)
    error_line: str | None = None


def _pytest_sections(lines: list[str], root: str | None) -> list[_Section]:
    sections: list[_Section] = []
    kind: str | None = None
    current: _Section | None = None
    in_captured = False
    for line in lines:
        banner = _PYTEST_BANNER.match(line)
        if banner:
            title = banner.group("title")
            kind = "failed" if title == "FAILURES" else "error" if title == "ERRORS" else None
            current = None
            continue
        if kind is None:
            continue
        header = _PYTEST_SECTION.match(line)
        if header:
            name = header.group("title")
            for prefix in ("ERROR at setup of ", "ERROR at teardown of ", "ERROR "):
                name = name.removeprefix(prefix)
            current = _Section(kind, name)
            sections.append(current)
            in_captured = False
            continue
        if current is None:
            continue
        if line.startswith("---") and " Captured " in line:
            in_captured = True  # a test's own prints must not pass for traceback locations
        elif line.startswith("---"):
            in_captured = False
        if in_captured:
            continue
        frame = _PYTEST_FRAME.match(line)
        if frame:
            rel = workspace_path(frame.group("path"), root)
            if rel is not None:
                current.frames.append((rel, int(frame.group("line"))))
        elif line.startswith("E ") and current.error_line is None:
            current.error_line = line[1:].strip()
    return sections


def _section_name(nodeid: str) -> str:
    if "::" not in nodeid:
        return f"collecting {nodeid}"
    return nodeid.split("::", 1)[1].replace("::", ".")


def _take_section(sections: list[_Section], kind: str, nodeid: str) -> _Section | None:
    name = _section_name(nodeid)
    file = nodeid.split("::", 1)[0]
    candidates = [s for s in sections if s.kind == kind and s.name == name]
    # Same-named tests in two files: prefer the section whose traceback passes through this file.
    chosen = next((s for s in candidates if any(f == file for f, _ in s.frames)), None)
    chosen = chosen or (candidates[0] if candidates else None)
    if chosen is not None:
        sections.remove(chosen)
    return chosen


def _pytest_failure(kind: str, nodeid: str, msg: str | None, section: _Section | None,
                    root: str | None) -> Failure:
    file = workspace_path(nodeid.split("::", 1)[0], root)
    line: int | None = None
    if section is not None and section.frames:
        # The deepest frame inside the workspace: where the error was raised in our code.
        file, line = section.frames[-1]
    text = msg or (section.error_line if section else None) or kind
    label = nodeid if kind == "failed" else f"{nodeid} (error)"
    return Failure(file=file, line=line, message=_message(f"{label}: {text}"))


def parse_pytest(text: str, root: str | None = None) -> ParsedOutput:
    lines = _clean_lines(text)
    sections = _pytest_sections(lines, root)
    failures: list[Failure] = []
    short = [m for m in map(_PYTEST_SHORT.match, lines) if m]
    for m in short:
        kind = "failed" if m.group("kind") == "FAILED" else "error"
        nodeid = m.group("nodeid").strip()
        failures.append(_pytest_failure(kind, nodeid, m.group("msg"), _take_section(sections, kind, nodeid),
                                        root))
    if not short:  # run without -rfE: the sections are all there is
        for s in sections:
            file, line = s.frames[-1] if s.frames else (None, None)
            failures.append(Failure(file=file, line=line, message=_message(f"{s.name}: {s.error_line or s.kind}")))
    summary = next((m for m in map(_PYTEST_SUMMARY.match, reversed(lines)) if m), None)
    interrupted = any(line.startswith("!") and "Interrupted:" in line for line in lines)
    if summary is None:
        counts = Counts(failed=sum(1 for m in short if m.group("kind") == "FAILED"),
                        errors=sum(1 for m in short if m.group("kind") == "ERROR"))
        return ParsedOutput(counts, failures, executed=False, summary=None)
    found: dict[str, int] = {}
    for number, word in _PYTEST_COUNT.findall(summary.group("body")):
        key = word.rstrip("s") if word in ("errors", "warnings") else word
        found[key] = found.get(key, 0) + int(number)
    counts = Counts(
        passed=found.get("passed", 0) + found.get("xpassed", 0),
        failed=found.get("failed", 0),
        errors=found.get("error", 0),
        skipped=found.get("skipped", 0) + found.get("xfailed", 0),
    )
    ran = counts.passed + counts.failed + counts.errors > 0 and not interrupted
    return ParsedOutput(counts, failures, executed=ran, summary=summary.group("body"))


# mypy ---------------------------------------------------------------------------------------

_MYPY_LINE = re.compile(
    r"^(?P<path>[^\s:][^:]*?)(?::(?P<line>\d+))?(?::\d+)*: (?P<sev>error|warning|note): (?P<msg>.*?)"
    r"(?:  \[(?P<code>[\w-]+)\])?$"
)
_MYPY_SUMMARY = re.compile(
    r"^(?:Success: no issues found in (?P<ok>\d+) source files?"
    r"|Found (?P<n>\d+) errors? in (?P<files>\d+) files? "
    r"\((?:checked (?P<checked>\d+) source files?|errors prevented further checking)\))$"
)


def parse_mypy(text: str, root: str | None = None) -> ParsedOutput:
    failures: list[Failure] = []
    summary: re.Match[str] | None = None
    for line in _clean_lines(text):
        m = _MYPY_LINE.match(line)
        if m and m.group("sev") == "error":
            msg = m.group("msg") + (f" [{m.group('code')}]" if m.group("code") else "")
            if m.group("line") is None:  # e.g. "nothere: error: Cannot read file": no location
                failures.append(Failure(file=None, line=None, message=_message(line)))
                continue
            file = workspace_path(m.group("path"), root)
            failures.append(Failure(file=file, line=int(m.group("line")), message=_message(msg)))
        elif s := _MYPY_SUMMARY.match(line.strip()):
            summary = s
    if summary is None:
        return ParsedOutput(Counts(failed=len(failures)), failures, executed=False)
    if summary.group("ok") is not None:
        checked = int(summary.group("ok"))
        return ParsedOutput(Counts(passed=checked), failures, executed=checked > 0, summary=summary.group(0))
    checked_text = summary.group("checked")
    checked = int(checked_text) if checked_text is not None else 0
    counts = Counts(passed=max(checked - int(summary.group("files")), 0), failed=int(summary.group("n")))
    return ParsedOutput(counts, failures, executed=checked > 0, summary=summary.group(0))


# pyright ------------------------------------------------------------------------------------

_PYRIGHT_LINE = re.compile(
    r"^\s*(?P<path>\S.*?):(?P<line>\d+):(?P<col>\d+) - (?P<sev>error|warning|information): (?P<msg>.*)$"
)
_PYRIGHT_SUMMARY = re.compile(r"^(?P<n>\d+) errors?, \d+ warnings?, \d+ informations?\s*$")


def parse_pyright(text: str, root: str | None = None) -> ParsedOutput:
    failures: list[Failure] = []
    summary: re.Match[str] | None = None
    for line in _clean_lines(text):
        m = _PYRIGHT_LINE.match(line)
        if m and m.group("sev") == "error":
            failures.append(Failure(file=workspace_path(m.group("path"), root), line=int(m.group("line")),
                                    message=_message(m.group("msg"))))
        elif s := _PYRIGHT_SUMMARY.match(line):
            summary = s
    if summary is None:
        return ParsedOutput(Counts(failed=len(failures)), failures, executed=False)
    return ParsedOutput(Counts(failed=int(summary.group("n"))), failures, executed=True,
                        summary=summary.group(0).strip())


# ruff ---------------------------------------------------------------------------------------

_RUFF_CONCISE = re.compile(r"^(?P<path>[^\s:][^:]*?):(?P<line>\d+):(?P<col>\d+): (?P<msg>.+)$")
_RUFF_ARROW = re.compile(r"^\s*--> (?P<path>.+?):(?P<line>\d+):(?P<col>\d+)$")  # the default "full" format
_RUFF_SUMMARY = re.compile(r"^(?:All checks passed!|Found (?P<n>\d+) errors?\b.*)$")


def parse_ruff(text: str, root: str | None = None) -> ParsedOutput:
    failures: list[Failure] = []
    summary: re.Match[str] | None = None
    previous = ""
    for line in _clean_lines(text):
        if m := _RUFF_ARROW.match(line):
            failures.append(Failure(file=workspace_path(m.group("path"), root), line=int(m.group("line")),
                                    message=_message(previous)))
        elif m := _RUFF_CONCISE.match(line):
            failures.append(Failure(file=workspace_path(m.group("path"), root), line=int(m.group("line")),
                                    message=_message(m.group("msg"))))
        elif s := _RUFF_SUMMARY.match(line):
            summary = s
        if line.strip():
            previous = line.strip()
    if summary is None:
        return ParsedOutput(Counts(failed=len(failures)), failures, executed=False)
    found = int(summary.group("n")) if summary.group("n") else 0
    return ParsedOutput(Counts(failed=found), failures, executed=True, summary=summary.group(0))


# tsc ----------------------------------------------------------------------------------------

_TSC_PLAIN = re.compile(r"^(?P<path>[^\s(][^(]*?)\((?P<line>\d+),(?P<col>\d+)\): error (?P<code>TS\d+): (?P<msg>.*)$")
_TSC_PRETTY = re.compile(r"^(?P<path>\S+?):(?P<line>\d+):(?P<col>\d+) - error (?P<code>TS\d+): (?P<msg>.*)$")
_TSC_GLOBAL = re.compile(r"^error (?P<code>TS\d+): (?P<msg>.*)$")
_TSC_SUMMARY = re.compile(r"^Found (?P<n>\d+) errors?\b.*$")


def parse_tsc(text: str, root: str | None = None) -> ParsedOutput:
    failures: list[Failure] = []
    summary: re.Match[str] | None = None
    for line in _clean_lines(text):
        if m := _TSC_PLAIN.match(line) or _TSC_PRETTY.match(line):
            failures.append(Failure(file=workspace_path(m.group("path"), root), line=int(m.group("line")),
                                    message=_message(f"{m.group('code')}: {m.group('msg')}")))
        elif m := _TSC_GLOBAL.match(line):
            failures.append(Failure(file=None, line=None, message=_message(f"{m.group('code')}: {m.group('msg')}")))
        elif s := _TSC_SUMMARY.match(line):
            summary = s
    # tsc prints nothing on success, so only its exit code can say whether it ran.
    return ParsedOutput(Counts(failed=len(failures)), failures, executed=True if failures else None,
                        summary=summary.group(0) if summary else None)


def parse_generic(text: str, root: str | None = None) -> ParsedOutput:
    del text, root  # exit code only
    return ParsedOutput()


PARSERS = {
    "pytest": parse_pytest,
    "mypy": parse_mypy,
    "pyright": parse_pyright,
    "ruff": parse_ruff,
    "tsc": parse_tsc,
    "generic": parse_generic,
}


def parse_output(parser: ParserName, text: str, exit_code: int | None, root: str | None) -> ParsedOutput:
    parsed = PARSERS[parser](text, root)
    if parsed.executed is None:
        parsed.executed = exit_code is not None
    return parsed
