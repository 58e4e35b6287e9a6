"""The NDJSON lines `eval run` writes and `eval compare` reads.

One `cohort` header, then one `attempt` line per finished attempt (in the order
they ended), `task_invalid` lines for tasks whose oracle does not fail on a
fresh fixture, an `incomplete` marker when the cohort was interrupted, and a
`resume` marker where `eval run --resume` went on with it.
Records hold no prompts, no subprocess output and no setting overrides (an
arm's `config` may carry credentials), only names, numbers and enums.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from lsp_agent.eval.metrics import Damage, Metrics, MetricsStatus

MAX_RECORD_LINE = 1024 * 1024


class Outcome(StrEnum):
    VERIFIED = "verified"  # the agent exited and the oracle then passed (exit 0)
    COMPLETED_UNVERIFIED = "completed_unverified"  # the agent exited; the oracle could not decide
    FAILED = "failed"  # the agent exited and the oracle failed (exit 1)
    TIMEOUT = "timeout"  # the agent outlived timeoutMs; its process tree was killed; no oracle run
    CANCELLED = "cancelled"  # the operator interrupted the cohort during the attempt; no oracle run


class _Record(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True, extra="forbid", strict=True, frozen=True)

    def line(self) -> str:
        return json.dumps(self.model_dump(mode="json"), separators=(",", ":"))  # ASCII: any locale


class ArmInfo(_Record):
    name: str
    features: dict[str, bool]
    tool_profile: str


class CohortHeader(_Record):
    type: Literal["cohort"] = "cohort"
    cohort: str
    model: str
    runtime_revision: str
    arms: list[ArmInfo]
    tasks: list[str]
    repetitions: int
    timeout_ms: int
    attempts: int  # planned: tasks x repetitions x 2
    primary_metric: str = "success"  # the manifest's; decides which verdict is confirmatory


ExecutorName = Literal["local", "ray"]


class SamplingInfo(_Record):
    """The arm's sampling settings as sent to the provider (null: not set, the server's default)."""

    temperature: float | None = None
    seed: int | None = None
    max_output_tokens: int | None = None


class AttemptRecord(_Record):
    type: Literal["attempt"] = "attempt"
    cohort: str
    model: str
    task: str
    repetition: int = Field(ge=1)
    arm: str
    position: Literal[0, 1]  # 0 when this arm ran first in its pair
    outcome: Outcome
    elapsed_ms: int = Field(ge=0)  # agent process + post-run oracle; excludes fixture and first check
    verification_ms: int | None = Field(None, ge=0)  # the post-run oracle alone; null when it did not run
    exit_code: int | None = None  # the agent's; null when it was killed
    stop_reason: str | None = None  # from the agent's run_finish event, when it has a known value
    metrics_status: MetricsStatus
    metrics: Metrics | None = None  # only when metricsStatus is observed
    metrics_issue: Damage | None = None  # why totals were withheld
    #: the harness's own claim in its run_finish event; null when the stream had none (killed, cut, older record)
    harness_verification: Literal["verified", "failed", "not_run"] | None = None
    # Provenance: which build ran the attempt, where, when and how it sampled. Optional, so record
    # files written before these fields existed still compare (they show as "unknown").
    started_at: str | None = None  # UTC, ISO 8601 to the second
    executor: ExecutorName | None = None
    host: str | None = None  # the machine the attempt ran on
    agent_version: str | None = None  # lsp-agent's package version
    agent_commit: str | None = None  # the checkout's commit; null when installed from a package
    sampling: SamplingInfo | None = None
    server_model: str | None = None  # the model id the provider's replies named, when they name one


class TaskInvalid(_Record):
    type: Literal["task_invalid"] = "task_invalid"
    cohort: str
    task: str
    reason: str


class Incomplete(_Record):
    type: Literal["incomplete"] = "incomplete"
    cohort: str
    #: cancelled: interrupted; error: the cohort could not go on; lost: a worker went away mid-attempt
    reason: Literal["cancelled", "error", "lost"]
    recorded: int
    planned: int  # attempts this run set out to record


class Resume(_Record):
    """`eval run --resume`: what follows re-runs the cohort's missing and cancelled attempts.

    It supersedes the cohort's earlier `incomplete` markers and `cancelled` attempts.
    """

    type: Literal["resume"] = "resume"
    cohort: str
    missing: int


Line = Annotated[CohortHeader | AttemptRecord | TaskInvalid | Incomplete | Resume, Field(discriminator="type")]
_LINE: TypeAdapter[Line] = TypeAdapter(Line)


class RecordError(Exception):
    pass


def parse_line(raw: str | bytes, number: int) -> Line:
    if len(raw) > MAX_RECORD_LINE:
        raise RecordError(f"line {number}: longer than {MAX_RECORD_LINE} bytes")
    try:
        return _LINE.validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(line)"
        raise RecordError(f"line {number}: not an eval record ({where}: {first['msg']})") from exc
