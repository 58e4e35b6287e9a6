"""Capability resolution per model call: context pack, effort escalation, request hashes.

Pure functions: the loop passes in what it knows (model facts, the count of
consecutive structured tool failures since the latest user message, the
efforts in force) and records the resulting CapabilityResolution in the
`llm.request` replay event together with `request_hashes` — never the bodies.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from typing import Any, Literal

from lsp_agent.domain.wire import WireModel
from lsp_agent.settings.config import ModelInfo

__all__ = [
    "CONTEXT_PACK",
    "CONTEXT_PACK_MAX_TOKENS",
    "DEFAULT_EFFORT",
    "ESCALATE_AFTER_FAILURES",
    "PACK_MIN_CONTEXT",
    "CapabilityResolution",
    "context_pack_decision",
    "estimate_tokens",
    "request_hashes",
    "resolve_capabilities",
]

#: The defaults of `limits.context_pack_min_context`, `limits.context_pack_max_tokens` and
#: `limits.escalate_after_failures`.
PACK_MIN_CONTEXT = 64_000
CONTEXT_PACK_MAX_TOKENS = 2_048
ESCALATE_AFTER_FAILURES = 2
#: The effort servers use when none is sent; escalation starts from here.
DEFAULT_EFFORT = "medium"


class CapabilityResolution(WireModel):
    """What was decided for one model call, as recorded in `llm.request.capabilityResolution`."""

    protocol: str
    context_window: int | None
    context_pack: bool
    context_pack_reason: str
    consecutive_tool_failures: int
    reasoning_effort: str | None = None
    effort_source: Literal["user", "settings", "escalated"] | None = None
    #: Why no effort is sent, when none is.
    reason_none: str | None = None


def estimate_tokens(text: str) -> int:
    """The character estimate (chars/4), rounded up: one rule for every model, with no tokenizer to load."""
    return math.ceil(len(text) / 4)


def context_pack_decision(info: ModelInfo, known: bool, min_context: int = PACK_MIN_CONTEXT,
                          max_tokens: int = CONTEXT_PACK_MAX_TOKENS) -> tuple[bool, str]:
    """Pack when context >= `min_context` tokens (64,000 by default), reasoning and tools; an explicit
    `false` always blocks, and so does a pack larger than `max_tokens` (estimated).

    For a model outside the registry the three facts must be declared; for a known
    model they come from the registry (with the user's overrides already applied).
    """
    size = estimate_tokens(CONTEXT_PACK)
    if size > max_tokens:
        return False, f"the context pack is {size} tokens, over the {max_tokens}-token bound"
    blocked = [name for name, value in (("reasoning", info.reasoning), ("tools", info.tools)) if value is False]
    if blocked:
        return False, f"declared without {' and '.join(blocked)} support"
    missing = [name for name, value in (("contextWindow", info.context_window), ("reasoning", info.reasoning),
                                        ("tools", info.tools)) if value is None]
    if missing:
        who = "known model" if known else "unknown model"
        return False, f"{who}: {', '.join(missing)} not declared (declare all three to enable)"
    assert info.context_window is not None
    if info.context_window < min_context:
        return False, f"context window {info.context_window} < {min_context} tokens"
    source = "registry" if known else "declared"
    return True, f"{source}: {info.context_window}-token context, reasoning and tools"


def _escalate(efforts: list[str], start: str) -> str:
    if start in efforts:
        return efforts[min(efforts.index(start) + 1, len(efforts) - 1)]
    return efforts[-1]


def resolve_capabilities(
    info: ModelInfo,
    known: bool,
    failures_since_user: int,
    user_effort: str | None,
    settings_effort: str | None,
    *,
    protocol: str = "chat",
    pack_min_context: int = PACK_MIN_CONTEXT,
    pack_max_tokens: int = CONTEXT_PACK_MAX_TOKENS,
    escalate_after: int = ESCALATE_AFTER_FAILURES,
) -> CapabilityResolution:
    """Decide the context pack and the reasoning effort for the next call.

    `user_effort` is an explicit choice for this run and always wins; `settings_effort`
    is the configured default and is raised one level (default/medium -> high) after
    `escalate_after` (2 by default) consecutive structured tool failures, on models that have effort levels.
    The caller resets `failures_since_user` on a successful tool result or a user message.
    """
    pack, pack_reason = context_pack_decision(info, known, pack_min_context, pack_max_tokens)
    effort: str | None = None
    source: Literal["user", "settings", "escalated"] | None = None
    reason_none: str | None = None
    if user_effort:
        effort, source = user_effort, "user"
    elif not info.efforts:
        reason_none = "model has no effort levels"
    elif failures_since_user >= escalate_after:
        effort, source = _escalate(info.efforts, settings_effort or DEFAULT_EFFORT), "escalated"
    elif settings_effort:
        effort, source = settings_effort, "settings"
    else:
        reason_none = "no effort configured: the server default applies"
    return CapabilityResolution(
        protocol=protocol,
        context_window=info.context_window,
        context_pack=pack,
        context_pack_reason=pack_reason,
        consecutive_tool_failures=failures_since_user,
        reasoning_effort=effort,
        effort_source=source,
        reason_none=reason_none,
    )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=16)
def _text_sha256(text: str) -> str:
    return _sha256(text.encode("utf-8"))  # the same instructions every step: hashed once


def request_hashes(body: bytes, instructions: str | None = None, tools_sha256: str | None = None,
                   body_sha256: str | None = None) -> dict[str, str]:
    """sha256 of the whole body, of the instructions and of the tool list (replay records).

    Callers that know the instructions and the tool list's digest pass them (the loop does:
    re-parsing a long body costs milliseconds a step), and the body's digest when they hashed it
    incrementally (core/prefix.py RequestBytes). Otherwise they are read from the body, for both
    wires: the `instructions` field (Responses) or the leading system message (Chat Completions).
    Never returns any content itself.
    """
    if instructions is not None and tools_sha256 is not None:
        return {"bodySha256": body_sha256 or _sha256(body), "instructionsSha256": _text_sha256(instructions),
                "toolsSha256": tools_sha256}
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        parsed = {}
    parsed = parsed if isinstance(parsed, dict) else {}
    instructions = parsed.get("instructions")
    if not isinstance(instructions, str):
        messages = parsed.get("messages")
        first = messages[0] if isinstance(messages, list) and messages else None
        is_system = isinstance(first, dict) and first.get("role") == "system"
        instructions = first.get("content") if is_system and isinstance(first, dict) else ""
        instructions = instructions if isinstance(instructions, str) else ""
    tools = parsed.get("tools", [])
    tools_bytes = json.dumps(tools, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return {
        "bodySha256": _sha256(body),
        "instructionsSha256": _sha256(instructions.encode("utf-8")),
        "toolsSha256": _sha256(tools_bytes),
    }


CONTEXT_PACK = """\
# Working on long tasks

These habits keep a long run on track. Follow them unless the user asks otherwise.

## Plan
- Restate the task and its acceptance check in one or two sentences before acting.
- Break the work into small steps, each ending in a state you can check.
- Re-plan when an observation contradicts the plan; do not push on with a broken plan.

## Read before you edit
- Read a file (or the relevant range) before changing it, and re-read it after it may
  have changed: after your own edits, a failed patch, a command that rewrites files,
  or a context compaction.
- Search for every caller or use of a symbol before renaming or changing its signature.
- Prefer the smallest edit that does the job; keep the file's style and line endings.
- When an edit fails to apply, read the file again instead of retrying from memory.

## Verify
- Run verify_project after a meaningful change and before you say the task is done.
- Read failures closely: fix the first real error, then run the check again.
- A claim that something works needs a check that ran and passed; say plainly when
  a check could not run or was skipped.
- Do not weaken, skip or delete tests to make a check pass.

## Keep notes
- Keep a short running list of constraints and decisions (from the user, instruction
  files and what you learned), what you tried and how it failed, and the next step.
- Carry every constraint forward; check the final result against each one.
- If the same approach fails twice, stop and change approach rather than repeating it.

## Tools
- Use the dedicated tools (read, search, list, patch, verify) rather than shell commands
  that do the same thing; keep command output small.
- Do not repeat an identical call that already failed; change something first.
- Stay inside the workspace; never touch secrets or files outside the task.

## Finish
- End with a brief summary: what changed (files), how it was verified, and anything
  left open or uncertain.
"""
