"""verify_project: run the project's fixed checks and return a structured, unforgeable envelope.

The model supplies nothing: the commands come from the configuration or are detected from the
project's files. Before anything runs, the agent's edits are flushed to disk (an editor saves its
buffers) and the sources are fingerprinted, so the envelope says exactly what was verified. The
result text is slimmed at source: failures with file and line and each tool's summary line, never
the list of passes, and nothing that changes from run to run (durations live only in the envelope).
"""

from __future__ import annotations

import asyncio
import re
import shlex
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lsp_agent.core.approval import ApprovalSubject
from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.domain.edits import ApplyResult
from lsp_agent.domain.history import ErrorKind
from lsp_agent.sandbox import Sandbox
from lsp_agent.settings.config import Limits, VerifyCommand
from lsp_agent.tools.fingerprint import FingerprintError, FingerprintStalled, source_fingerprint, walk_fingerprint
from lsp_agent.tools.process import head_tail, run_process
from lsp_agent.tools.verify_detect import command_label, detect_commands
from lsp_agent.tools.verify_envelope import MAX_ENVELOPE_FAILURES, CheckResult, Failure, VerifyEnvelope, envelope_status

if TYPE_CHECKING:
    from lsp_agent.tools.verify_parsers import ParsedOutput

_DEFAULTS = Limits()
#: failures listed per check in the result text; the rest are counted.
MAX_SHOWN_FAILURES = 30
_HEX_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
_DURATION = re.compile(r"\bin \d+(?:\.\d+)?s\b(?: \(\d+:\d\d:\d\d\))?")
# Without a terminal, tools wrap or cut messages at 80 columns (pytest's short summary does).
_COLUMNS = "240"


class VerifyProjectArgs(StrictArgs):
    """No fields, on purpose: the commands are the project's own, never text from the model."""


@dataclass
class _Ran:
    command: VerifyCommand
    label: str
    check: CheckResult
    parsed: ParsedOutput
    output: str
    problem: str | None = None  # why this check makes the run an `error`
    start_error: str | None = None  # the OS's reason when the program could not be started


def _stable(text: str, root: Path) -> str:
    # Absolute temp paths and object addresses change from run to run; the model would re-read.
    for spelled in sorted({str(root.resolve()), str(root)}, key=len, reverse=True):
        text = text.replace(spelled + "/", "").replace(spelled, ".")
    return _HEX_ADDRESS.sub("0x…", text)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


class VerifyProject(Tool[VerifyProjectArgs]):
    name = "verify_project"
    access = Access.EXEC
    args_model = VerifyProjectArgs
    summary = (
        "Run the project's fixed verification commands - the configured ones ([[tools.verify]] in "
        ".lsp-agent/config.toml), else those detected from its files: pytest, mypy or pyright, ruff, "
        "tsc, npm test - against the files on disk, after saving your edits. Takes no arguments: you "
        "cannot choose the commands. Returns `OK: verify passed` or `ERROR: verify failed` with totals, "
        f"then per check its exit code, each failure as `file:line: message` (at most "
        f"{MAX_SHOWN_FAILURES} per check) and the tool's summary line; passing tests are not listed. "
        f"Each command is killed after {_DEFAULTS.verify_timeout_s:g} seconds."
    )
    use_when = (
        "you finished a change and need evidence that it works, or want the project's current test, "
        "type and lint failures with file and line."
    )
    avoid_when = (
        "you want to run one particular test, script or ad-hoc command (use run_command). Do not call it "
        "again without changing files in between: the result would be the same."
    )

    def paths(self, args: VerifyProjectArgs) -> Iterable[str]:
        return ()

    def approval(self, args: VerifyProjectArgs, ctx: ToolContext) -> ApprovalSubject | None:
        # Blocking (detection lists files): the dispatcher calls it in a thread.
        root = ctx.root.resolve()
        configured = ctx.settings.tools.verify
        commands = configured if configured is not None else detect_commands(root)
        if not commands:
            return None
        # Not retryable under on-failure: a failing check is this tool's normal answer, not a sandbox problem.
        # The user sees (and a session grant covers) every check's exact argv, not its short label.
        return ApprovalSubject(kind="command", what="; ".join(shlex.join(c.argv) for c in commands),
                               program="verify_project", commands=tuple(tuple(c.argv) for c in commands),
                               unsandboxed=Sandbox.from_settings(ctx.settings, root).needs_approval())

    async def run(self, args: VerifyProjectArgs, ctx: ToolContext) -> ToolResult:
        limits = ctx.settings.limits
        root = await asyncio.to_thread(ctx.root.resolve)
        flushed = await self._flush(ctx)
        if not flushed.ok:
            reason = flushed.message or (flushed.failure.value if flushed.failure else "flush failed")
            envelope = VerifyEnvelope(status="error", revision=None, clean=None, fingerprint="", checks=[],
                                      error=f"unsaved edits: {reason}")
            text = (f"ERROR: verify not run — unsaved edits could not be written to disk ({reason}), so "
                    "nothing was run. Re-read the files you edited, redo the edit if needed, then verify again.")
            return self._result(envelope, _stable(text, root), ErrorKind.TOOL_FAILURE, limits)
        degraded = ""
        try:
            revision, clean, fingerprint = await source_fingerprint(root, limits.internal_timeout_s)
        except FingerprintStalled as exc:
            # git blocked (a FIFO .gitignore, a stalled read): the walk needs no program, and the
            # envelope says it knows no revision and no cleanliness rather than the run hanging.
            revision, clean, fingerprint = None, None, await walk_fingerprint(root)
            degraded = (f"\nNOTE: the sources were fingerprinted without git ({exc}): no revision and no "
                        "clean state are recorded for this run.")
        except (FingerprintError, OSError) as exc:
            envelope = VerifyEnvelope(status="error", revision=None, clean=None, fingerprint="", checks=[],
                                      error=f"could not fingerprint the sources: {exc}")
            text = f"ERROR: verify not run — could not fingerprint the sources ({exc}); nothing was run."
            return self._result(envelope, _stable(text, root), ErrorKind.TOOL_FAILURE, limits)
        configured = ctx.settings.tools.verify
        commands = configured if configured is not None else await asyncio.to_thread(detect_commands, root)
        if not commands:
            error = ("no verification commands: none configured and none detected (no tests, no mypy/"
                     "pyright/ruff/tsc configuration, no npm test script)")
            envelope = VerifyEnvelope(status="error", revision=revision, clean=clean, fingerprint=fingerprint,
                                      checks=[], error=error)
            text = (f"ERROR: verify not run — {error}. Add [[tools.verify]] entries (kind, argv, parser) to "
                    ".lsp-agent/config.toml, or check the work with run_command.")
            return self._result(envelope, text, ErrorKind.TOOL_FAILURE, limits)
        sandbox = Sandbox.from_settings(ctx.settings, root)
        ran = [await self._run_check(command, root, limits, sandbox, ctx.approved_unsandboxed) for command in commands]
        problems = [r.problem for r in ran if r.problem]
        checks = [r.check for r in ran]
        run_error = "; ".join(problems) if problems else None
        envelope = VerifyEnvelope(status=envelope_status(checks, run_error), revision=revision, clean=clean,
                                  fingerprint=fingerprint, checks=checks, error=run_error)
        kind = None
        if envelope.status == "error":
            kind = ErrorKind.TIMEOUT if any(c.timed_out for c in checks) else ErrorKind.TOOL_FAILURE
        elif envelope.status == "failed":
            kind = ErrorKind.TOOL_FAILURE
        return self._result(envelope, _stable(_render(envelope, ran, limits) + degraded, root), kind, limits)

    async def _flush(self, ctx: ToolContext) -> ApplyResult:
        try:
            # An empty list means: everything the agent edited.
            return await ctx.applier.flush([])
        except Exception as exc:  # an applier bug must not pass for a verified state
            return ApplyResult(ok=False, message=f"{type(exc).__name__}: {exc}")

    async def _run_check(self, command: VerifyCommand, root: Path, limits: Limits, sandbox: Sandbox,
                         approved_unsandboxed: bool = False) -> _Ran:
        # the output parsers are imported when a check runs: a run that never verifies does not hold them
        from lsp_agent.tools.verify_parsers import parse_output

        label = command_label(command)
        try:
            outcome = await run_process(list(command.argv), root, limits.verify_timeout_s,
                                        env={"COLUMNS": _COLUMNS}, sandbox=sandbox,
                                        approved_unsandboxed=approved_unsandboxed)
        except OSError as exc:
            # SandboxRefused and GitConfigRefused carry their own message (no strerror).
            return self._not_started(command, label, exc.strerror or str(exc) or type(exc).__name__)
        if outcome.start_error is not None:
            # The sandbox's own failure (exit 1, a `bwrap:` line) is not the check's verdict on the code.
            return self._not_started(command, label, f"the sandbox could not run it: {outcome.start_error}")
        parsed = parse_output(command.parser, outcome.output, outcome.exit_code, str(root))
        failures = [Failure(file=f.file, line=f.line, message=_stable(f.message, root))
                    for f in parsed.failures[:MAX_ENVELOPE_FAILURES]]
        check = CheckResult(
            kind=command.kind, command=list(command.argv), exit_code=outcome.exit_code, signal=outcome.signal,
            timed_out=outcome.timed_out, output_truncated=outcome.output_truncated,
            duration_ms=outcome.duration_ms,
            # A command we killed did not run to completion, whatever it printed before.
            executed=bool(parsed.executed) and not outcome.timed_out and outcome.signal is None,
            counts=parsed.counts, failures=failures,
        )
        problem = None
        if outcome.timed_out:
            problem = (f"{command.kind} command {label} timed out after {limits.verify_timeout_s:g} s; "
                       "its process group was killed")
        return _Ran(command, label, check, parsed, outcome.output, problem)

    @staticmethod
    def _not_started(command: VerifyCommand, label: str, reason: str) -> _Ran:
        from lsp_agent.tools.verify_parsers import ParsedOutput

        check = CheckResult(kind=command.kind, command=list(command.argv), exit_code=None, signal=None,
                            timed_out=False, output_truncated=False, duration_ms=0, executed=False,
                            counts=ParsedOutput().counts, failures=[])
        return _Ran(command, label, check, ParsedOutput(executed=False), "",
                    problem=f"could not start {command.kind} command {label}: {reason}", start_error=reason)

    def _result(self, envelope: VerifyEnvelope, text: str, kind: ErrorKind | None, limits: Limits) -> ToolResult:
        if len(text) > limits.result_chars:
            note = (f"\n[TRUNCATED] the result was longer than {limits.result_chars} characters; fix the "
                    "failures shown and run verify_project again to see the rest.")
            body, _ = head_tail(text, limits.result_chars - len(note) - 64)
            text = body + note
        metadata = {"envelope": envelope.to_metadata()}
        if kind is None:
            return ToolResult.success(text, **metadata)
        return ToolResult.failure(kind, text, **metadata)


def _totals(ran: list[_Ran]) -> str:
    parts: list[str] = []
    tests = [r.check for r in ran if r.check.kind == "test" and r.command.parser != "generic"]
    if tests:
        passed = sum(c.counts.passed for c in tests)
        failed = sum(c.counts.failed for c in tests)
        line = f"{passed} passed, {failed} failed"
        skipped = sum(c.counts.skipped for c in tests)
        errors = sum(c.counts.errors for c in tests)
        if skipped:
            line += f", {skipped} skipped"
        if errors:
            line += f", {_plural(errors, 'error')}"
        parts.append(line)
    for kind in ("typecheck", "lint"):
        counted = [r.check for r in ran if r.check.kind == kind and r.command.parser != "generic"]
        if counted:
            parts.append(_plural(sum(c.counts.failed for c in counted), f"{kind} error"))
    failing = sum(1 for r in ran if r.check.exit_code != 0)
    if failing:
        parts.append(f"{failing} of {_plural(len(ran), 'check')} failed")
    elif not parts:
        parts.append(f"all {_plural(len(ran), 'check')} exited 0")
    return "; ".join(parts)


def _check_state(r: _Ran, limits: Limits) -> str:
    c = r.check
    if r.start_error is not None:
        return f"could not start ({r.start_error})"
    if c.timed_out:
        return f"timed out after {limits.verify_timeout_s:g} s; process group killed"
    if c.signal is not None:
        return f"killed by signal {_signal_name(c.signal)}"
    return f"exit={c.exit_code}"


def _render_check(r: _Ran, limits: Limits, budget: int) -> list[str]:
    c = r.check
    head = f"{c.kind} ({r.label}): {_check_state(r, limits)}"
    if r.parsed.summary:
        head += f" — {_DURATION.sub('', r.parsed.summary).strip()}"
    if c.exit_code == 0 and not c.executed:
        head += " — nothing executed"
    lines = [head]
    if c.output_truncated:
        lines.append("  (the output exceeded the capture limit; counts and failures may be incomplete)")
    shown = r.parsed.failures[:MAX_SHOWN_FAILURES]
    for f in shown:
        where = f"{f.file}:{f.line}: " if f.file and f.line else f"{f.file}: " if f.file else ""
        lines.append(f"  {where}{f.message}")
    hidden = max(len(r.parsed.failures), c.counts.failed + c.counts.errors) - len(shown)
    if shown and hidden > 0:
        lines.append(f"  ... {_plural(hidden, 'more failure')} not shown")
    broke = r.start_error is None and c.exit_code != 0
    if broke and not shown and r.output.strip():
        # Nothing parseable (a crash, a usage error, a generic command): show the output itself.
        body, _ = head_tail(_DURATION.sub("in …s", r.output.strip()), budget)
        lines.append("  output:")
        lines.extend(f"    {line}" for line in body.splitlines())
    return lines


def _render(envelope: VerifyEnvelope, ran: list[_Ran], limits: Limits) -> str:
    kinds = "; ".join(f"{r.check.kind}: {r.label}" for r in ran)
    if envelope.status == "passed":
        first = f"OK: verify passed — {_totals(ran)} ({kinds})"
    elif envelope.status == "failed":
        first = f"ERROR: verify failed — {_totals(ran)} ({kinds})"
    else:
        first = f"ERROR: verify error — {envelope.error} ({kinds})"
    lines = [first]
    evidence = any(c.executed and c.kind in ("test", "typecheck") for c in envelope.checks)
    if envelope.status == "passed" and not evidence:
        lines.append("Note: no test or type check actually executed (everything skipped or nothing collected), "
                     "so this run is not evidence that the code works.")
    budget = max(limits.output_chars // 2, 200)
    for r in ran:
        lines.extend(_render_check(r, limits, budget))
    return "\n".join(lines)
