"""Code actions on `lsp-agent` diagnostics: "Ask the agent to fix this" (SPEC 6).

The action carries a command (`lsp-agent.fixDiagnostic`); running it starts `agent/run` with the
failure, file and line in the prompt — in the session whose check reported it when that session
is idle (it already knows the task), else in a new session.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from lsp_agent.protocol.methods import COMMAND_FIX_DIAGNOSTIC, DIAGNOSTIC_SOURCE
from lsp_agent.protocol.models import FixDiagnosticArgs

TITLE = "Ask the agent to fix this"


def fix_actions(params: types.CodeActionParams) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    for diagnostic in params.context.diagnostics:
        if diagnostic.source != DIAGNOSTIC_SOURCE:
            continue
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        args = FixDiagnosticArgs(uri=params.text_document.uri, line=diagnostic.range.start.line + 1,
                                 message=diagnostic.message, kind=str(diagnostic.code or data.get("kind") or "check"),
                                 session_id=data.get("sessionID") if isinstance(data.get("sessionID"), str) else None)
        actions.append(types.CodeAction(
            title=TITLE, kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
            command=types.Command(title=TITLE, command=COMMAND_FIX_DIAGNOSTIC, arguments=[args.wire()])))
    return actions


def fix_prompt(args: FixDiagnosticArgs, rel: str) -> str:
    return (f"verify_project reported a {args.kind} failure in {rel} at line {args.line}:\n"
            f"{args.message}\n\n"
            f"Read {rel} around line {args.line}, find the cause, fix it, then run verify_project again.")


def command_argument(arguments: tuple[Any, ...]) -> Any:
    """The command's single argument (an object), or what was sent instead (validation names it)."""
    return arguments[0] if len(arguments) == 1 else list(arguments)
