"""The approval policy: which calls the user must approve before they run, and the desk that asks.

Policies (Codex's meanings; setting `approvalPolicy`):
- `untrusted`: every command (run_command, verify_project) is approved first, plus everything below.
- `on-request` (default): ask only when a call would step outside the usual limits: a command that
  would run without a sandbox (bubblewrap unavailable), or an MCP tool that may change things.
- `on-failure`: as on-request, and a command that failed inside the sandbox may be re-run without
  it once the user approves.
- `never`: never ask. What would need an approval runs without the escalation: an unsandboxed
  command is refused by the sandbox; MCP tools the user configured run; an edit of a sensitive path
  is refused by the edit tool.
Under every policy but `never`, an edit (apply_patch, write_file) that creates or changes a
sensitive path (`tools.sensitive_paths`: files other programs run when the workspace is opened)
is approved first.

A decision is asked through the `Approver` port (the editor, a TTY, or nobody); no answer within
`approvalTimeoutS` is a deny, cancelling the generation while it waits cancels the call.
`allow_session` grants exactly what the dialog showed, and says so (`session_scope`): a command's
whole argv (verify_project: its exact checks), for the same reason; an MCP tool whatever its arguments
(the user configured the server and the tool is one declared operation, where a command line is a
whole language: `python3 -m pytest -q` granted must not grant `python3 -c ...`). The user's own
`[approvals] allow` rules (settings/approval_rules.py) answer matching commands without asking. Every
decision is stored with its scope (a store event with the time) and emitted as a `notice` event of
kind `approval`; the call's result carries it in its metadata (never sent to the model, so results
stay free of timestamps).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol

from lsp_agent.domain import events
from lsp_agent.settings.approval_rules import AllowRule, first_match

ApprovalPolicy = Literal["untrusted", "on-request", "on-failure", "never"]
APPROVAL_EVENT = "approval"


class Decision(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    DENY = "deny"


OPTIONS: tuple[Decision, ...] = (Decision.ALLOW_ONCE, Decision.ALLOW_SESSION, Decision.DENY)


class Reason(StrEnum):
    UNTRUSTED = "untrusted"  # approvalPolicy untrusted: every command
    UNSANDBOXED = "unsandboxed"  # bubblewrap unavailable: it would run without a sandbox
    MCP = "mcp"  # an MCP tool that may change things
    RETRY_UNSANDBOXED = "retry_unsandboxed"  # on-failure: re-run without the sandbox
    SENSITIVE_PATH = "sensitive_path"  # an edit of a file other programs run on open (tools.sensitive_paths)


@dataclass(frozen=True)
class ApprovalSubject:
    """What a tool tells the policy about one call (`Tool.approval`)."""

    kind: Literal["command", "mcp", "edit"]
    #: what the user is shown: the argv joined like a shell, the tool and its arguments, or a diff
    what: str
    #: the program (commands) or tool name
    program: str
    #: every argv that would run (run_command: one; verify_project: each check), exactly: what an
    #: `allow_session` grants and what `[approvals] allow` rules are matched against. Empty for MCP.
    commands: tuple[tuple[str, ...], ...] = ()
    #: why the command would run without a sandbox (None: it will be sandboxed, or no sandbox is wanted)
    unsandboxed: str | None = None
    #: a command that ran in the sandbox and failed may be re-run without it (on-failure)
    retryable: bool = False
    #: the sensitive paths (tools.sensitive_paths) an edit would create or change
    sensitive: tuple[str, ...] = ()


@dataclass(frozen=True)
class ApprovalRequest:
    session_id: str
    generation: str
    call_id: str
    tool: str
    what: str
    why: str
    reason: Reason
    kind: Literal["command", "mcp", "edit"] = "command"
    options: tuple[Decision, ...] = OPTIONS
    #: what `allow_session` would allow without asking again, in the words the user reads
    session_scope: str = ""


@dataclass(frozen=True)
class Answer:
    decision: Decision
    #: who decided: "user", "editor", "tty", "no approver", "timeout", "cancelled", "session"
    who: str


class Approver(Protocol):
    """Asks the user; the desk bounds the wait (timeout, cancellation) and treats any error as deny."""

    async def ask(self, request: ApprovalRequest) -> Answer: ...


class DenyAll:
    """No one to ask (the default): every approval is denied."""

    async def ask(self, request: ApprovalRequest) -> Answer:
        return Answer(Decision.DENY, "no approver")


def reasons(policy: ApprovalPolicy, subject: ApprovalSubject) -> list[Reason]:
    """Why this call needs an approval before it runs (empty: it runs as it is)."""
    if policy == "never":
        return []
    found: list[Reason] = []
    if subject.kind == "command" and policy == "untrusted":
        found.append(Reason.UNTRUSTED)
    if subject.unsandboxed is not None:
        found.append(Reason.UNSANDBOXED)
    if subject.kind == "mcp":
        found.append(Reason.MCP)
    if subject.sensitive:
        found.append(Reason.SENSITIVE_PATH)
    return found


def why(reason: Reason, subject: ApprovalSubject) -> str:
    if reason is Reason.UNSANDBOXED:
        return (f"commands cannot be sandboxed here ({subject.unsandboxed}); this one would run WITHOUT a "
                "sandbox, with your permissions")
    if reason is Reason.RETRY_UNSANDBOXED:
        return "it failed inside the sandbox; run it again WITHOUT the sandbox, with your permissions"
    if reason is Reason.SENSITIVE_PATH:
        return (f"it changes {', '.join(subject.sensitive)}, which other programs (your editor, shell, git or CI) "
                "run or load when the workspace is opened (tools.sensitive_paths)")
    if reason is Reason.MCP:
        return "the MCP tool is not marked read-only by a trusted server and may change things"
    return "approvalPolicy is untrusted: every command is approved before it runs"


#: A session grant's key starts with this. Keys stored before grants were exact ("tool, program,
#: reason": a program-wide grant) lack it and are never read back as grants.
GRANT_PREFIX = "exact/2\x1f"


@dataclass(frozen=True)
class Grant:
    #: what the store remembers; equal keys grant each other
    key: str
    #: the same, as the user reads it
    scope: str


def grant_of(tool: str, subject: ApprovalSubject, reason: Reason) -> Grant:
    """Exactly what an `allow_session` answer to this question allows from now on."""
    # An unsandboxed retry and an unsandboxed first run grant the same thing.
    grant = Reason.UNSANDBOXED if reason is Reason.RETRY_UNSANDBOXED else reason
    unsandboxed = ", even without a sandbox" if grant is Reason.UNSANDBOXED else ""
    if subject.kind == "mcp":
        # The tool whatever its arguments: see the module docstring.
        return Grant(f"{GRANT_PREFIX}{tool}\x1f{grant.value}\x1f*",
                     f"every call of {tool}, whatever its arguments{unsandboxed}")
    if subject.kind == "command" and subject.commands:
        exact = json.dumps([list(argv) for argv in subject.commands], ensure_ascii=False)
        shown = "; ".join(f"`{shlex.join(argv)}`" for argv in subject.commands)
        what = (f"exactly {shown} in {tool}" if len(subject.commands) == 1
                else f"exactly these checks together in {tool}: {shown}")
        return Grant(f"{GRANT_PREFIX}{tool}\x1f{grant.value}\x1f{exact}", what + unsandboxed)
    # Anything else is granted as the exact text shown.
    return Grant(f"{GRANT_PREFIX}{tool}\x1f{grant.value}\x1f{json.dumps(subject.what, ensure_ascii=False)}",
                 f"exactly this {subject.kind} in {tool}{unsandboxed}")


def _scope_text(grant: Grant, rules: list[AllowRule] | None) -> str:
    if rules:
        return "; ".join(f"every command matching the user's rule `{r.pattern}`" for r in rules)
    return grant.scope


def matching_rules(rules: tuple[AllowRule, ...], subject: ApprovalSubject, reason: Reason) -> list[AllowRule] | None:
    """The user's rules that allow every command of this call (None: not all are allowed).

    A rule answers only `untrusted`'s question (may this command run, in the sandbox?). It never takes
    a command out of the sandbox: a rule written where bubblewrap runs would otherwise, on a machine
    where it does not, run e.g. the repository's conftest.py with the user's permissions unasked.
    Leaving the sandbox is always a person's answer (once, or for the session, exactly)."""
    if not rules or subject.kind != "command" or not subject.commands or reason is not Reason.UNTRUSTED:
        return None
    found: list[AllowRule] = []
    for argv in subject.commands:
        rule = first_match(rules, argv)
        if rule is None:
            return None
        if rule not in found:
            found.append(rule)
    return found


class Store(Protocol):
    def record_event(self, session_id: str, kind: str, data: dict[str, Any]) -> None: ...

    def events(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]: ...


def remembered(store: Store, session_id: str) -> set[str]:
    """The `allow_session` grants of a stored session (a resumed session keeps them): exact grants
    only; an older program-wide key grants nothing (the user is asked again)."""
    return {str(e["key"]) for e in store.events(session_id, APPROVAL_EVENT)
            if e.get("decision") == Decision.ALLOW_SESSION.value and isinstance(e.get("key"), str)
            and str(e["key"]).startswith(GRANT_PREFIX)}


@dataclass
class ApprovalDesk:
    """One generation's asking: policy, session memory, bounded wait, record and event."""

    policy: ApprovalPolicy
    approver: Approver
    timeout_s: float
    store: Store
    session_id: str
    generation: str
    cancel: asyncio.Event
    emit: Callable[[Any], None]
    granted: set[str] = field(default_factory=set)
    #: the user's `[approvals] allow` rules
    rules: tuple[AllowRule, ...] = ()

    async def decide(self, tool: str, call_id: str, subject: ApprovalSubject, reason: Reason) -> dict[str, Any]:
        """Ask (or recall) one decision; returns its record. Raises CancelledError when the
        generation is cancelled while waiting (the call is then cancelled, never run)."""
        grant = grant_of(tool, subject, reason)
        request = ApprovalRequest(self.session_id, self.generation, call_id, tool, subject.what,
                                  why(reason, subject), reason, subject.kind, session_scope=grant.scope)
        rules = matching_rules(self.rules, subject, reason)
        if rules:
            # Allowed for this call by the user's standing rule; nothing is added to the session.
            answer = Answer(Decision.ALLOW_ONCE, "; ".join(f"rule: {r.pattern}" for r in rules))
        elif grant.key in self.granted:
            answer = Answer(Decision.ALLOW_SESSION, "session")
        else:
            answer = await self._ask(request)
        if answer.decision is Decision.ALLOW_SESSION:
            self.granted.add(grant.key)
        record = {"generation": self.generation, "callID": call_id, "tool": tool, "what": subject.what,
                  "why": request.why, "reason": reason.value, "decision": answer.decision.value,
                  "who": answer.who, "scope": _scope_text(grant, rules),
                  "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "key": grant.key}
        # Stored before it is shown or acted on: the record survives a crash that follows.
        self.store.record_event(self.session_id, APPROVAL_EVENT, record)
        shown = {k: v for k, v in record.items() if k != "key"}
        verb = "allowed" if answer.decision is not Decision.DENY else "denied"
        self.emit(events.NoticeEvent(session_id=self.session_id, generation=self.generation, kind="approval",
                                     message=f"{verb} ({answer.decision.value}, by {answer.who}): {tool}: "
                                             f"{subject.what}", data=shown))
        if self.cancel.is_set() and answer.who == "cancelled":
            raise asyncio.CancelledError
        return shown

    async def _ask(self, request: ApprovalRequest) -> Answer:
        if self.cancel.is_set():
            return Answer(Decision.DENY, "cancelled")
        asking = asyncio.ensure_future(self.approver.ask(request))
        cancelled = asyncio.ensure_future(self.cancel.wait())
        try:
            done, _ = await asyncio.wait({asking, cancelled}, timeout=self.timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (asking, cancelled):
                if not task.done():
                    task.cancel()
            # The children's outcomes are read below; only our own cancellation propagates from here.
            await asyncio.gather(asking, cancelled, return_exceptions=True)
        if asking in done:
            try:
                answer = asking.result()
            except Exception as exc:  # the approver failed (client error): no approval
                return Answer(Decision.DENY, f"error ({type(exc).__name__}: {exc})"[:200])
            if isinstance(answer, Answer) and isinstance(answer.decision, Decision):
                return answer
            return Answer(Decision.DENY, "invalid answer")
        if cancelled in done:
            return Answer(Decision.DENY, "cancelled")
        return Answer(Decision.DENY, "timeout")


def denied_text(tool: str, record: dict[str, Any]) -> str:
    return (f"ERROR: refused: {record['what']}. {tool} needs the user's approval and did not get it: "
            f"{record['why']} (decision {record['decision']} by {record['who']}). Do not retry the same call; "
            "continue another way, or ask the user.")
