"""The verify_project evidence envelope and the rule that gives it its status.

The envelope is what skills cite as evidence, so it records facts only the harness can know: the
Git revision and a digest of the sources taken before anything ran, and per check the exit code,
signal, timeout, output truncation and whether any test actually executed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

CheckKind = Literal["test", "typecheck", "lint"]
Status = Literal["passed", "failed", "error"]

#: failures recorded per check; `counts` keep the true totals.
MAX_ENVELOPE_FAILURES = 200


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
