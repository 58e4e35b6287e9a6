"""Code actions on `lsp-agent` diagnostics: "Ask the agent to fix this"; and the skill candidate
actions "Propose / Validate / Promote skill candidate NAME" (built here, offered by
server/skill_methods.py).

The action carries a command (`lsp-agent.fixDiagnostic`); running it starts `agent/run` with the
failure, file and line in the prompt — in the session whose check reported it when that session
is idle (it already knows the task), else in a new session.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from lsprotocol import types

from lsp_agent.domain import bounded_json
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


# --- skill candidates ---------------------------------------------------------------------------
# Offered in an open proposal JSON (a file with `evidence`) or a candidate view
# (`lsp-agent-skill:NAME`); which of them is offered is decided by server/skill_methods.py.

PROPOSE_TITLE = "Propose skill candidate {name}"
VALIDATE_TITLE = "Validate skill candidate {name}"
PROMOTE_TITLE = "Promote skill candidate {name}"
_PROPOSAL_FIELDS = ("description", "applicability", "procedure")


@dataclass(frozen=True)
class SkillDocument:
    """What an open document says about a skill candidate."""

    name: str | None  # the candidate it is about
    session_id: str | None = None  # the session its evidence cites (a proposal or validation file)
    full: bool = False  # a whole proposal (description, applicability, procedure), not only evidence


def skill_document(uri: str, text: str | None, view_scheme: str) -> SkillDocument | None:
    if uri.startswith(f"{view_scheme}:"):
        tail = unquote(uri.split(":", 1)[1]).strip("/").rsplit("/", 1)[-1]
        return SkillDocument(name=tail.removesuffix(".md") or None)
    if not uri.lower().endswith(".json") or not text:
        return None
    try:
        data = bounded_json.loads(text)  # a workspace file: a deep one is just not a skill document
    except ValueError:
        return None
    evidence = data.get("evidence") if isinstance(data, dict) else None
    if not isinstance(evidence, dict):
        return None
    name = data.get("name")
    session = evidence.get("sessionID")
    return SkillDocument(name=name if isinstance(name, str) and name else None,
                         session_id=session if isinstance(session, str) else None,
                         full=all(isinstance(data.get(k), str) for k in _PROPOSAL_FIELDS))


def skill_action(title: str, command: str, argument: dict[str, object]) -> types.CodeAction:
    return types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix,
                            command=types.Command(title=title, command=command, arguments=[argument]))
