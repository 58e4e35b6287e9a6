"""verify_project machinery: the evidence envelope, the project's fixed commands, output parsers
and the source fingerprint.

The envelope is what skills cite as evidence, so it records facts only the harness can know: the
Git revision and a digest of the sources taken before anything ran, and per check the exit code,
signal, timeout, output truncation and whether any test actually executed. Parsers are pure
functions over a command's output text; paths they return are workspace-relative (or None when a
location lies outside the workspace).
"""

from __future__ import annotations

import asyncio
import configparser
import hashlib
import importlib.util
import json
import os
import re
import shutil
import stat
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from lsp_agent.config import VerifyCommand
from lsp_agent.tools.process import run_process

CheckKind = Literal["test", "typecheck", "lint"]
ParserName = Literal["pytest", "mypy", "pyright", "ruff", "tsc", "generic"]
Status = Literal["passed", "failed", "error"]

# --- the envelope (SPEC 7) ------------------------------------------------------------------


class _Wire(BaseModel):
    # camelCase on the wire, snake_case in Python; unknown keys are a bug, not data.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Counts(_Wire):
    """Tests: pytest's own counts. Type checkers and linters: `failed` is the number of errors
    reported, `passed` the number of files checked without one when the tool says so."""

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0


class Failure(_Wire):
    file: str | None  # workspace-relative; None when the location is outside the workspace
    line: int | None  # 1-based
    message: str


class CheckResult(_Wire):
    kind: CheckKind
    command: list[str]
    exit_code: int | None  # None when killed (timeout, signal) or never started
    signal: int | None
    timed_out: bool
    output_truncated: bool
    duration_ms: int
    # False when nothing ran: every test skipped, no tests collected, collection aborted, or the
    # command never started. A skill's evidence needs at least one executed test or type check.
    executed: bool
    counts: Counts
    failures: list[Failure]  # at most MAX_ENVELOPE_FAILURES; counts keep the true totals


class VerifyEnvelope(_Wire):
    status: Status
    revision: str | None  # git HEAD; None outside git or before the first commit
    clean: bool | None  # `git status --porcelain` was empty; None outside git
    fingerprint: str  # sha256 of the sources before anything ran; "" when not taken
    checks: list[CheckResult]
    error: str | None = None

    def to_metadata(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def envelope_status(checks: list[CheckResult], error: str | None) -> Status:
    """error: a command could not start, timed out, or the run could not happen at all;
    failed: a check exited non-zero (or was killed by a signal); passed otherwise."""
    if error is not None or any(c.timed_out for c in checks):
        return "error"
    if any(c.exit_code != 0 for c in checks):
        return "failed"
    return "passed"


# --- output parsers -------------------------------------------------------------------------

MAX_ENVELOPE_FAILURES = 200
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


# --- the project's fixed commands -----------------------------------------------------------

_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
                        ".ruff_cache", ".pytest_cache", ".tox", ".nox", "build", "dist", "site-packages"})
_SCAN_DEPTH = 6
_SCAN_DIRS = 5000
# npm writes this placeholder into every new package.json; it is not a test suite.
_NPM_PLACEHOLDER = "no test specified"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _ini_sections(path: Path) -> configparser.ConfigParser | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, configparser.Error):
        return None
    return parser


def _has_test_files(root: Path) -> bool:
    for visited, (current, dirs, files) in enumerate(os.walk(root), start=1):
        depth = len(Path(current).relative_to(root).parts)
        if any(f.endswith(".py") and (f.startswith("test_") or f.endswith("_test.py")) for f in files):
            return True
        if depth == 1 and Path(current).name == "tests" and any(f.endswith(".py") for f in files):
            return True
        if depth >= _SCAN_DEPTH or visited >= _SCAN_DIRS:
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
    return False


def _uses_pytest(root: Path, pyproject: dict[str, Any]) -> bool:
    if (root / "pytest.ini").is_file() or (root / "conftest.py").is_file():
        return True
    if "pytest" in pyproject.get("tool", {}):
        return True
    for name, section in (("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")):
        ini = _ini_sections(root / name) if (root / name).is_file() else None
        if ini is not None and ini.has_section(section):
            return True
    return _has_test_files(root)


def _mypy_config(root: Path, pyproject: dict[str, Any]) -> dict[str, Any] | None:
    """mypy's settings when the project configures it (its keys decide whether we pass targets)."""
    if "mypy" in pyproject.get("tool", {}):
        section = pyproject["tool"]["mypy"]
        return section if isinstance(section, dict) else {}
    for name, section_name in (("mypy.ini", "mypy"), (".mypy.ini", "mypy"), ("setup.cfg", "mypy")):
        ini = _ini_sections(root / name) if (root / name).is_file() else None
        if ini is not None and ini.has_section(section_name):
            return dict(ini.items(section_name))
    return None


def _module_available(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _python_tool(module: str) -> list[str] | None:
    if _module_available(module):
        return [sys.executable, "-m", module]
    found = shutil.which(module)
    return [found] if found else None


def _npm_test_script(root: Path) -> bool:
    try:
        data = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    scripts = data.get("scripts") if isinstance(data, dict) else None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    return isinstance(test, str) and bool(test.strip()) and _NPM_PLACEHOLDER not in test


def detect_commands(root: Path) -> list[VerifyCommand]:
    """The project's own checks, found from its files; blocking (call it in a thread)."""
    pyproject = _read_toml(root / "pyproject.toml") if (root / "pyproject.toml").is_file() else {}
    commands: list[VerifyCommand] = []
    if _uses_pytest(root, pyproject):
        # --verbosity=-1 pins the level even when the project's addopts already has -q (at -qq
        # pytest drops the closing "N passed" line); no cache provider, so no .pytest_cache appears.
        commands.append(VerifyCommand(kind="test", parser="pytest", argv=[
            sys.executable, "-m", "pytest", "-q", "--verbosity=-1", "-rfE", "--tb=short", "--no-header",
            "-p", "no:cacheprovider"]))
    if _npm_test_script(root):
        commands.append(VerifyCommand(kind="test", parser="generic", argv=["npm", "test"]))
    mypy_settings = _mypy_config(root, pyproject)
    if mypy_settings is not None and _module_available("mypy"):
        targets = [] if any(k in mypy_settings for k in ("files", "packages", "modules")) else ["."]
        commands.append(VerifyCommand(kind="typecheck", parser="mypy", argv=[
            sys.executable, "-m", "mypy", "--no-pretty", "--error-summary", *targets]))
    if (root / "pyrightconfig.json").is_file() or "pyright" in pyproject.get("tool", {}):
        local = root / "node_modules" / ".bin" / "pyright"
        program = "node_modules/.bin/pyright" if local.is_file() else shutil.which("pyright")
        if program:
            commands.append(VerifyCommand(kind="typecheck", parser="pyright", argv=[program]))
    if (root / "tsconfig.json").is_file() and (root / "node_modules" / ".bin" / "tsc").is_file():
        # A relative program path is resolved against the working directory (the root).
        commands.append(VerifyCommand(kind="typecheck", parser="tsc", argv=[
            "node_modules/.bin/tsc", "--noEmit", "--pretty", "false", "-p", "."]))
    has_ruff_config = any((root / n).is_file() for n in ("ruff.toml", ".ruff.toml"))
    if has_ruff_config or "ruff" in pyproject.get("tool", {}):
        ruff = _python_tool("ruff")
        if ruff:
            # --no-fix: verification must never change the sources it is judging.
            commands.append(VerifyCommand(kind="lint", parser="ruff", argv=[
                *ruff, "check", "--output-format", "concise", "--no-fix", "--no-cache"]))
    return commands


def command_label(command: VerifyCommand) -> str:
    """A short, stable name for a command in result text (never an absolute path)."""
    if command.parser != "generic":
        return command.parser
    argv = command.argv
    program = PurePosixPath(argv[0].replace("\\", "/")).name
    if program.startswith("python") and len(argv) > 2 and argv[1] == "-m":
        return argv[2]
    if program.startswith("python") and len(argv) > 1 and argv[1] == "-c":
        return "python -c"  # the program text itself is too long to name a check
    if program in ("npm", "yarn", "pnpm") and len(argv) > 1:
        return f"{program} {argv[1]}"
    if program.startswith("python") and len(argv) > 1 and not argv[1].startswith("-"):
        return f"python {PurePosixPath(argv[1].replace(chr(92), '/')).name}"
    return program


# --- source fingerprint ---------------------------------------------------------------------

_WALK_SKIP = frozenset({".git", "node_modules", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache",
                        ".pytest_cache"})


class FingerprintError(Exception):
    pass


def _file_token(path: Path) -> bytes:
    """What the digest records per path: content hash (and exec bit), link target, or absence."""
    try:
        info = path.lstat()
    except OSError:
        return b"missing"
    if stat.S_ISLNK(info.st_mode):
        try:
            return b"link:" + os.fsencode(os.readlink(path))
        except OSError:
            return b"link:?"
    if stat.S_ISDIR(info.st_mode):
        return b"dir"  # a submodule or nested repository listed by git
    if not stat.S_ISREG(info.st_mode):
        return b"special"
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return b"unreadable"
    executable = b"x" if info.st_mode & stat.S_IXUSR else b"-"
    return b"file:" + executable + digest.hexdigest().encode()


def _digest(root: Path, revision: str | None, paths: list[str]) -> str:
    digest = hashlib.sha256(b"lsp-agent fingerprint v1\0")
    digest.update(b"revision:" + (revision or "").encode() + b"\0")
    for rel in sorted(set(paths)):
        digest.update(os.fsencode(rel) + b"\0" + _file_token(root / rel) + b"\0")
    return digest.hexdigest()


def _walk_files(root: Path) -> list[str]:
    found: list[str] = []
    for current, dirs, files in os.walk(root):
        base = Path(current)
        kept = []
        for d in dirs:
            if d in _WALK_SKIP:
                continue
            if (base / d).is_symlink():  # recorded as a link, never followed out of the root
                files.append(d)
            else:
                kept.append(d)
        dirs[:] = kept
        found.extend((base / f).relative_to(root).as_posix() for f in files)
    return found


async def _git(root: Path, timeout_s: float, *args: str) -> tuple[int | None, str, bool]:
    outcome = await run_process(["git", *args], root, timeout_s)
    if outcome.timed_out:
        raise FingerprintError(f"git {args[0]} timed out after {timeout_s:g} s")
    return outcome.exit_code, outcome.output, outcome.output_truncated


async def source_fingerprint(root: Path, timeout_s: float = 60.0) -> tuple[str | None, bool | None, str]:
    """(revision, clean, digest) of the workspace as it is now. Raises FingerprintError when the
    sources cannot be listed completely (a partial digest would be worse than none)."""
    root = await asyncio.to_thread(root.resolve)
    try:
        code, out, _ = await _git(root, timeout_s, "rev-parse", "--is-inside-work-tree")
    except FileNotFoundError:  # no git on this machine
        code, out = None, ""
    if code != 0 or out.strip() != "true":
        return None, None, await asyncio.to_thread(lambda: _digest(root, None, _walk_files(root)))
    code, out, _ = await _git(root, timeout_s, "rev-parse", "--verify", "--quiet", "HEAD")
    revision = out.strip() if code == 0 and out.strip() else None  # None before the first commit
    code, out, cut = await _git(root, timeout_s, "status", "--porcelain")
    if code != 0 or cut:
        raise FingerprintError(f"git status failed (exit={code})")
    clean = not out.strip()
    code, out, cut = await _git(root, timeout_s, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if code != 0:
        raise FingerprintError(f"git ls-files failed (exit={code})")
    if cut:
        raise FingerprintError("the list of files is larger than the output capture limit")
    paths = [p for p in out.split("\0") if p]
    return revision, clean, await asyncio.to_thread(_digest, root, revision, paths)
