"""Running one step's calls: through the session's gate, with cooperative cancellation.

A call cancelled while it waits at the gate never runs; a running program is killed by the
generation's cancel signal and its partial output kept; a tool bug becomes that call's own
`tool_failure` result instead of taking the session down.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from lsp_agent.core import controller
from lsp_agent.core.approval import ApprovalDesk, ApprovalSubject, Decision, Reason, denied_text, reasons
from lsp_agent.core.checkpoint_port import StepRef
from lsp_agent.core.edit_diagnostics import EditDiagnostics
from lsp_agent.core.gate import Gate
from lsp_agent.core.tools import Access, Tool, ToolContext, ToolResult
from lsp_agent.core.write_detect import Snapshot, WriteDetector
from lsp_agent.domain import events
from lsp_agent.domain.edits import ApplyResult, CreateFile, EditApplier, EditPlan, UpdateFile
from lsp_agent.domain.history import ErrorKind, ToolCallPart, ToolResultPart

#: metadata key naming who wrote the paths in `written` (absent: the agent's own edit tool).
WRITER = "writer"

log = logging.getLogger(__name__)


class CallRunner:
    def __init__(self, gate: Gate, cancel_event: asyncio.Event, emit: Callable[[Any], None],
                 base: dict[str, str], result_chars: int, desk: ApprovalDesk | None = None) -> None:
        self.gate = gate
        #: asks the user before calls the approval policy names (None: nothing is asked)
        self.desk = desk
        self.cancel_event = cancel_event
        self.emit = emit
        self.base = base
        self.result_chars = result_chars
        self._waiting: set[asyncio.Task[Any]] = set()

    def cancel_waiting(self) -> None:
        """Calls still waiting at the gate are cancelled; they will never run."""
        for task in list(self._waiting):
            task.cancel()

    async def run(self, call: ToolCallPart, verdict: controller.Accepted | controller.Rejection,
                  ctx: ToolContext, step: int) -> ToolResultPart:
        if isinstance(verdict, controller.Rejection):
            return ToolResultPart(call_id=call.call_id, name=call.name, ok=False, output=verdict.output,
                                  error_kind=verdict.kind)
        tool = verdict.tool
        task = asyncio.current_task()
        assert task is not None
        self._waiting.add(task)
        started = time.monotonic()
        approvals: list[dict[str, Any]] = []
        try:
            async with self.gate.hold(exclusive=tool.access is not Access.READ):
                self._waiting.discard(task)
                if self.cancel_event.is_set():
                    raise asyncio.CancelledError
                # Asked inside the gate: one question at a time, right before the call would run.
                found = await self._subject(tool, verdict, ctx)
                subject = found if isinstance(found, ApprovalSubject) else None
                run_ctx, refusal = (ctx, found) if isinstance(found, ToolResult) else \
                    await self._approve(call, subject, ctx, approvals)
                if refusal is not None:
                    result = refusal
                else:
                    self.emit(events.ToolStart(**self.base, step=step, part=events.ToolPartInfo(
                        id=call.id, message_id=ctx.message_id, call_id=call.call_id, tool=call.name,
                        state=events.ToolState(status="running", input=verdict.raw_args))))
                    run = _execute_watching_writes if tool.access is Access.EXEC else _execute_checkpointed
                    if tool.access is Access.WRITE:
                        run = _execute_noting_diagnostics
                    result = await run(tool, verdict, run_ctx)
                    result = await self._retry_unsandboxed(call, subject, verdict, run_ctx, result, approvals)
        except asyncio.CancelledError:
            self._waiting.discard(task)
            result = ToolResult.failure(ErrorKind.CANCELLED,
                                        "cancelled: the run was cancelled before this call ran; nothing was done.")
        if self.cancel_event.is_set() and result.ok is False and result.error_kind is None:
            result.error_kind = ErrorKind.CANCELLED
        if self.cancel_event.is_set() and tool.access is Access.EXEC and result.error_kind is not ErrorKind.CANCELLED:
            result = ToolResult(False, f"ERROR: cancelled while running; partial output kept.\n{result.output}",
                                ErrorKind.CANCELLED, result.metadata)
        if approvals:  # what, who, when: kept with the result, never sent to the model
            result.metadata = {**result.metadata, "approvals": approvals}
        bound = self.result_chars
        output = result.output if len(result.output) <= bound else (
            result.output[:bound] + f"\n[TRUNCATED] result cut at {bound} characters")
        return ToolResultPart(call_id=call.call_id, name=call.name, ok=result.ok, output=output,
                              error_kind=result.error_kind, metadata=result.metadata,
                              elapsed_ms=int((time.monotonic() - started) * 1000))

    async def _subject(self, tool: Tool[Any], verdict: controller.Accepted,
                       ctx: ToolContext) -> ApprovalSubject | ToolResult | None:
        if self.desk is None or type(tool).approval is Tool.approval:
            return None  # nothing to approve: no thread hop for the many calls that ask nothing
        try:
            return await asyncio.to_thread(tool.approval, verdict.args, ctx)
        except Exception as exc:  # a hook bug must not let the call past the policy: refuse it
            log.exception("approval hook of %s failed", tool.name)
            return ToolResult.failure(ErrorKind.TOOL_FAILURE,
                                      f"tool_failure: whether {tool.name} needs the user's approval could not be "
                                      f"checked ({type(exc).__name__}); nothing was run. Try another way.")

    async def _approve(self, call: ToolCallPart, subject: ApprovalSubject | None, ctx: ToolContext,
                       approvals: list[dict[str, Any]]) -> tuple[ToolContext, ToolResult | None]:
        """(the context the call runs with, or the denial that replaces the call)."""
        if self.desk is None or subject is None:
            return ctx, None
        for reason in reasons(self.desk.policy, subject):
            record = await self.desk.decide(call.name, call.call_id, subject, reason)
            approvals.append(record)
            if record["decision"] == Decision.DENY.value:
                return ctx, ToolResult.failure(ErrorKind.DENIED, denied_text(call.name, record))
        granted = {r["reason"] for r in approvals}
        return dataclasses.replace(ctx, approved_unsandboxed=ctx.approved_unsandboxed or
                                   Reason.UNSANDBOXED.value in granted,
                                   approved_sensitive=ctx.approved_sensitive or
                                   Reason.SENSITIVE_PATH.value in granted), None

    async def _retry_unsandboxed(self, call: ToolCallPart, subject: ApprovalSubject | None,
                                 verdict: controller.Accepted, ctx: ToolContext, result: ToolResult,
                                 approvals: list[dict[str, Any]]) -> ToolResult:
        """on-failure: a command that failed inside the sandbox may run again without it."""
        if (self.desk is None or self.desk.policy != "on-failure" or subject is None or not subject.retryable
                or ctx.approved_unsandboxed or result.ok or result.error_kind is not ErrorKind.TOOL_FAILURE
                or self.cancel_event.is_set()):
            return result
        record = await self.desk.decide(call.name, call.call_id, subject, Reason.RETRY_UNSANDBOXED)
        approvals.append(record)
        if record["decision"] == Decision.DENY.value:
            return result
        unsandboxed = dataclasses.replace(ctx, approved_unsandboxed=True)
        retried = await _execute_watching_writes(verdict.tool, verdict, unsandboxed)
        retried.output = f"{retried.output}\n(run again without the sandbox, approved by the user: the sandboxed " \
                         "run had failed)"
        return retried


class _BaselineAfterFlush:
    """The tool's applier, re-taking the baseline after the harness's own save: the editor saving
    the agent's edits before a check is the agent's write, not the command's."""

    def __init__(self, inner: EditApplier, detector: WriteDetector) -> None:
        self.inner = inner
        self.detector = detector

    async def apply(self, plan: EditPlan) -> ApplyResult:
        return await self.inner.apply(plan)

    async def flush(self, paths: list[str]) -> ApplyResult:
        result = await self.inner.flush(paths)
        await self.detector.begin()
        return result


async def _execute_watching_writes(tool: Tool[Any], verdict: controller.Accepted, ctx: ToolContext) -> ToolResult:
    """Run a program and record what it changed in the workspace as writes by `command`
    (any program can write): they make a standing check stale and earlier reads stale exactly like the
    agent's edits.
    Runs alone at the gate (EXEC is exclusive), so no other call's writes are mixed in."""
    detector = WriteDetector(ctx.root, ctx.ignored_paths)
    await detector.begin()
    ref = StepRef(ctx.session_id, ctx.message_id, ctx.step, tool.name)
    # The checkpoint reuses the snapshot the write detection just took: it hashes only what changed.
    await _checkpoint(ctx, "before", ref, None, detector.before)
    result = await _execute(tool, verdict, dataclasses.replace(ctx, applier=_BaselineAfterFlush(ctx.applier,
                                                                                                 detector)))
    try:
        # A check's (verify_project's) new files are its artifacts; a changed existing file counts.
        written = await detector.end(created="envelope" not in result.metadata)
    except OSError as exc:  # cannot tell: count it as a write rather than keep a check on a guess
        written = [f"(unknown: {exc})"]
    await _checkpoint(ctx, "after", ref, None, detector.after)
    if written:
        own = [str(p) for p in result.metadata.get("written") or []]
        result.metadata["written"] = sorted({*own, *written})
        result.metadata[WRITER] = "command"
    return result


class _EditedTexts:
    """The tool's applier, noting the text each applied edit leaves in its file: in an editor the
    buffer holds it until saved, and the checkpoint after the step records it so that the save is
    known for the agent's own change."""

    def __init__(self, inner: EditApplier) -> None:
        self.inner = inner
        self.left: dict[str, str] = {}

    async def apply(self, plan: EditPlan) -> ApplyResult:
        result = await self.inner.apply(plan)
        if result.ok:
            for op in plan.ops:
                if isinstance(op, CreateFile):
                    self.left[op.path] = op.text
                elif isinstance(op, UpdateFile):
                    self.left[op.path] = op.new_text
        return result

    async def flush(self, paths: list[str]) -> ApplyResult:
        return await self.inner.flush(paths)


async def _execute_checkpointed(tool: Tool[Any], verdict: controller.Accepted, ctx: ToolContext) -> ToolResult:
    """An edit tool's call between two checkpoints of the paths it declares (no walk of the tree)."""
    if ctx.checkpoints is None or tool.access is Access.READ:
        return await _execute(tool, verdict, ctx)
    ref = StepRef(ctx.session_id, ctx.message_id, ctx.step, tool.name)
    declared = [str(p) for p in tool.paths(verdict.args)]
    await _checkpoint(ctx, "before", ref, declared, None)
    edited = _EditedTexts(ctx.applier)
    result = await _execute(tool, verdict, dataclasses.replace(ctx, applier=edited))
    written = [str(p) for p in result.metadata.get("written") or []]
    await _checkpoint(ctx, "after", ref, sorted({*declared, *written}), None, edited.left)
    return result


async def _execute_noting_diagnostics(tool: Tool[Any], verdict: controller.Accepted,
                                      ctx: ToolContext) -> ToolResult:
    """An edit tool's call; when an editor reports diagnostics, its new errors in the edited files are
    appended to the result (text only: what was written, and so verification, stays as it was)."""
    settings = ctx.settings.editor_queries
    if ctx.editor is None or not EditDiagnostics.wanted(ctx.editor, settings):
        return await _execute_checkpointed(tool, verdict, ctx)
    watch = EditDiagnostics(ctx.editor, ctx.documents, settings, [str(p) for p in tool.paths(verdict.args)])
    await watch.begin()
    result = await _execute_checkpointed(tool, verdict, ctx)
    written = [str(p) for p in result.metadata.get("written") or []]
    if result.ok and written:
        result.output += await watch.note_for(written)
    return result


async def _checkpoint(ctx: ToolContext, phase: str, ref: StepRef, paths: list[str] | None,
                      walk: Snapshot | None, edited: dict[str, str] | None = None) -> None:
    """A checkpoint that cannot be taken is logged; the step still runs (rewind then says that
    step has no checkpoint) — losing the user's work to a full state disk would be worse."""
    if ctx.checkpoints is None:
        return
    try:
        if phase == "before":
            await ctx.checkpoints.before(ref, paths, walk)
        else:
            await ctx.checkpoints.after(ref, paths, walk, edited)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("checkpoint %s %s of %s failed", phase, ref.tool, ref.session_id)


async def _execute(tool: Tool[Any], verdict: controller.Accepted, ctx: ToolContext) -> ToolResult:
    try:
        result: ToolResult = await tool.run(verdict.args, ctx)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a tool bug must not take the session down
        log.exception("tool %s failed", tool.name)
        return ToolResult.failure(ErrorKind.TOOL_FAILURE,
                                  f"tool_failure: {tool.name} failed unexpectedly ({type(exc).__name__}: {exc}). "
                                  "Try a different approach or report it to the user.")
    return result
