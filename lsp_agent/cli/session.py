"""`lsp-agent session show SES [--json]`: the CLI twin of `agent/session` — a stored session's messages
and parts with the IDs a skill proposal cites. Read-only.

Exit codes: 0 shown, 2 usage (no such workspace or session).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_USAGE = 0, 2
_LINE = 100


def add_session_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "session", help="stored sessions: show, list, checkpoints, rewind, fork",
        description="Stored sessions of a workspace, as the editor's agent/session shows them, and taking "
                    "them back: checkpoints, rewind (files, conversation or both), fork.")
    sub = parser.add_subparsers(dest="session_command", required=True)
    show = sub.add_parser("show", help="a session's messages and parts, with their IDs")
    show.add_argument("session", help="the session ID (the `sessionID` a run prints)")
    show.add_argument("--workspace", type=Path, default=Path.cwd(), help="workspace root (default: cwd)")
    show.add_argument("--json", action="store_true", help="one JSON object: the agent/session result, all pages")
    from lsp_agent.cli.session_rewind import add_rewind_parsers

    add_rewind_parsers(sub)
    return parser


def _short(text: str) -> str:
    flat = text.replace("\n", "⏎ ")
    return flat if len(flat) <= _LINE else flat[: _LINE - 1] + "…"


def _part_line(session_id: str, message_id: str, part: dict[str, Any]) -> str:
    kind = part["type"]
    if kind in ("text", "reasoning"):
        return f"  {part['id']} {kind}: {_short(part['text'])}"
    if kind == "tool_call":
        return f"  {part['id']} tool_call {part['name']} {_short(part['arguments'])}"
    line = f"  {part['id']} tool_result {part['name']} {'ok' if part['ok'] else 'error'}: {_short(part['output'])}"
    envelope = (part.get("metadata") or {}).get("envelope")
    if isinstance(envelope, dict):
        revision = str(envelope.get("revision") or "no revision")[:12]
        clean = "clean" if envelope.get("clean") else "not clean"
        cite = json.dumps({"sessionID": session_id, "messageID": message_id, "partID": part["id"]})
        line += f"\n    verification {envelope.get('status')} at {revision} ({clean}); evidence: {cite}"
    return line


def render(result: dict[str, Any]) -> str:
    session_id = result["sessionID"]
    lines = [f"session {session_id} · {result['title'] or '(untitled)'} · {len(result['messages'])} messages"]
    for message in result["messages"]:
        step = f" (step {message['step']})" if message.get("step") is not None else ""
        lines.append(f"{message['id']} {message['role']}{step}")
        lines.extend(_part_line(session_id, message["id"], p) for p in message["parts"])
    return "\n".join(lines) + "\n"


def show(root: Path, session_id: str) -> dict[str, Any] | None:
    """The agent/session result for every message of the session; None when there is no such session."""
    from pydantic import TypeAdapter

    from lsp_agent.protocol.models import MessageOut, PartOut, SessionResult
    from lsp_agent.settings.paths import workspace_dir
    from lsp_agent.store.db import Store

    part_out = TypeAdapter[Any](PartOut)
    store = Store(workspace_dir(root) / "store.db")
    try:
        row = store.session(session_id)
        if row is None:
            return None
        messages = [MessageOut(id=m.id, role=m.role.value, generation=m.generation, step=m.step,
                               parts=[part_out.validate_python(p.model_dump(mode="json")) for p in m.parts])
                    for m in store.messages(session_id)]
    finally:
        store.close()
    return SessionResult(session_id=session_id, title=row.title, messages=messages).wire()


def handle_session(args: argparse.Namespace) -> int:
    if args.session_command != "show":
        from lsp_agent.cli.session_rewind import handle

        return handle(args)
    root: Path = args.workspace
    if not root.is_dir():
        print(f"lsp-agent: --workspace {root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    result = show(root.resolve(), args.session)
    if result is None:
        print(f"lsp-agent: no session {args.session!r} in workspace {root.resolve()}", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n" if args.json else render(result))
    return EXIT_OK
