"""The controller: every check before a call has any effect.

The model may ask for anything; a failed check executes nothing and becomes that
call's own result, classified, with a message that says what to do next.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from lsp_agent.core.paths import PathDenied, check_writable, resolve_in_root
from lsp_agent.core.tool_registry import ToolRegistry
from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext
from lsp_agent.domain import bounded_json
from lsp_agent.domain.history import ErrorKind, ToolCallPart


@dataclass(frozen=True)
class Accepted:
    tool: Tool[Any]
    args: StrictArgs
    raw_args: dict[str, Any]


@dataclass(frozen=True)
class Rejection:
    kind: ErrorKind
    message: str

    @property
    def output(self) -> str:
        if self.kind is ErrorKind.DENIED:  # reads as every denial of the harness: "ERROR: refused: <what>. <why>"
            return f"ERROR: {self.message}"
        return f"ERROR: {self.kind.value}: {self.message}"


def _describe_validation(exc: ValidationError, tool: Tool[Any]) -> str:
    allowed = ", ".join(tool.args_model.model_fields) or "none"
    problems = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "arguments"
        kind = err["type"]
        if kind == "extra_forbidden":
            problems.append(f"unknown parameter '{loc}'")
        elif kind == "missing":
            problems.append(f"missing required parameter '{loc}'")
        else:
            problems.append(f"'{loc}': {err['msg']}")
    return (f"the arguments do not match the schema of {tool.name}: {'; '.join(problems)}. "
            f"Allowed parameters: {allowed}. Fix the arguments and call again.")


def read_only_refusal(tool_name: str, mode: str = "agent") -> str:
    # The mode promises an unchanged workspace: the agent's own edit tools obey it as the sandbox
    # makes commands obey it, and the model learns why and whom to ask instead of retrying.
    if mode in ("plan", "ask"):
        return (f"refused: {tool_name}. This session is in {mode.capitalize()} mode: no tool may change the "
                "workspace. Do not retry any edit; describe the change you would make instead. The user can "
                "switch to Agent mode (the editor's mode picker) to let the agent edit.")
    return (f"refused: {tool_name}. This session is in read-only mode (sandboxMode = \"read-only\"): "
            "no tool may change the workspace. Do not retry any edit; describe the change you would make "
            "instead. The user can allow edits by choosing another mode (the editor's mode picker, "
            "`--sandbox workspace-write`, or sandboxMode in the user's settings).")


ASK_MODE_COMMANDS = ("This session is in Ask mode: no command runs. Answer from the files you can read; "
                     "the user can switch to Plan or Agent mode to let commands run.")


def check(call: ToolCallPart, registry: ToolRegistry, ctx: ToolContext) -> Accepted | Rejection:
    tool = registry.get(call.name)
    if tool is None:
        return Rejection(ErrorKind.UNKNOWN_TOOL,
                         f"there is no tool named '{call.name}'. Available tools: {', '.join(registry.names())}.")
    raw = call.arguments.strip() or "{}"
    try:
        parsed = bounded_json.loads(raw)
    except bounded_json.JsonTooLarge as exc:
        return Rejection(ErrorKind.INVALID_JSON,
                         f"the arguments are refused: {exc.reason} (at character {exc.pos}). Resend them as one "
                         "plain JSON object: values nested a few levels at most, text as strings.")
    except json.JSONDecodeError as exc:
        return Rejection(ErrorKind.INVALID_JSON,
                         f"the arguments are not valid JSON ({exc.msg} at character {exc.pos}). "
                         "Resend the complete arguments as one JSON object.")
    if not isinstance(parsed, dict):
        return Rejection(ErrorKind.PARAMETER_MISMATCH,
                         f"the arguments must be a JSON object, not {type(parsed).__name__}.")
    try:
        args = tool.args_model.model_validate(parsed)
    except ValidationError as exc:
        return Rejection(ErrorKind.PARAMETER_MISMATCH, _describe_validation(exc, tool))
    writes = tool.access is Access.WRITE
    if writes and ctx.settings.sandbox_mode == "read-only":
        return Rejection(ErrorKind.DENIED, read_only_refusal(tool.name, ctx.settings.mode))
    try:
        paths = list(tool.paths(args))
    except (OSError, ValueError) as exc:  # a tool's path listing must not end the run
        return Rejection(ErrorKind.PATH_DENIED, f"the paths of this call cannot be checked ({exc}).")
    for path in paths:
        try:
            # resolve_in_root turns every OS error (a vanished root, a symlink loop) into PathDenied.
            if writes:
                check_writable(ctx.root, path)
            else:
                resolve_in_root(ctx.root, path)
        except PathDenied as exc:
            advice = "" if "never writes" in str(exc) else " Use a path relative to the workspace root, inside it."
            return Rejection(ErrorKind.PATH_DENIED, f"{exc}.{advice}")
    limit = ctx.settings.limits.write_bytes
    for text in tool.contents(args):
        size = len(text.encode("utf-8", errors="surrogatepass"))
        if size > limit:
            return Rejection(ErrorKind.PARAMETER_MISMATCH,
                             f"the content is {size} bytes; the limit is {limit}. Write smaller pieces.")
        if "\x00" in text:
            return Rejection(ErrorKind.PARAMETER_MISMATCH, "the content contains a NUL byte; only text is written.")
    refusal = _command_refusal(tool, args, ctx)
    if refusal is not None:
        return refusal
    if tool.access is Access.EXEC and ctx.settings.mode != "agent" and not _declares_commands(tool, args):
        # An effect no sandbox confines (an MCP tool that may change things): Plan and Ask ask no approval
        # that could allow it, and must not let it run unasked either.
        return Rejection(ErrorKind.DENIED, read_only_refusal(tool.name, ctx.settings.mode))
    return Accepted(tool, args, parsed)


def _declares_commands(tool: Tool[Any], args: StrictArgs) -> bool:
    try:
        return any(tool.commands(args))
    except ValueError:
        return True  # a command line the tool cannot parse is its own error; it starts nothing


def _command_refusal(tool: Tool[Any], args: StrictArgs, ctx: ToolContext) -> Rejection | None:
    try:
        commands = list(tool.commands(args))
    except ValueError:
        return None  # a command line that does not parse is the tool's own error to report, and runs nothing
    for argv in commands:
        if not argv:
            continue
        if any("\x00" in arg for arg in argv):
            return Rejection(ErrorKind.PARAMETER_MISMATCH, "the command contains a NUL byte.")
        shown = shlex.join(argv)
        if ctx.settings.mode == "ask":
            return Rejection(ErrorKind.DENIED, f"refused: {shown}. {ASK_MODE_COMMANDS}")
        if ctx.command_policy is None:
            return Rejection(ErrorKind.DENIED, f"refused: {shown}. No command may run in this session.")
        refusal = ctx.command_policy(argv, ctx.settings, ctx.root)
        if refusal:
            return Rejection(ErrorKind.DENIED, f"refused: {shown}. {refusal}")
    return None
