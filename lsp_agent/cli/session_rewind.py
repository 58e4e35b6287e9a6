"""`lsp-agent session list | checkpoints | rewind | fork`: the CLI twins of agent/sessions,
agent/checkpoints and agent/rewind, on the workspace's store and checkpoints (files on disk).

Exit codes: 0 done, 1 done but conflicts kept (send again with --confirm), 2 usage (no such workspace,
session, message or checkpoint), 3 refused (the session is running, or the store cannot be read).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_CONFLICTS, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3
_USAGE_KINDS = ("unknown_session", "unknown_message", "checkpoint_folded")


def add_rewind_parsers(sub: Any) -> None:
    listing = sub.add_parser("list", help="the workspace's sessions, newest first")
    checkpoints = sub.add_parser("checkpoints", help="a session's checkpoints (the steps that may have written)")
    checkpoints.add_argument("session", help="the session ID")
    rewind = sub.add_parser("rewind", help="take a session back to just before a message (or a checkpoint)")
    rewind.add_argument("session", help="the session ID")
    rewind.add_argument("--to", required=True, metavar="MESSAGE_ID",
                        help="a message of the session (msg_…) or a checkpoint (ckpt-…, e.g. a rewind's undo)")
    what = rewind.add_mutually_exclusive_group()
    what.add_argument("--code", dest="restore", action="store_const", const="code", help="the files (default)")
    what.add_argument("--conversation", dest="restore", action="store_const", const="conversation",
                      help="fork the session before the message")
    what.add_argument("--both", dest="restore", action="store_const", const="both", help="files and a fork")
    rewind.add_argument("--dry-run", action="store_true", help="print the diff; change nothing")
    rewind.add_argument("--confirm", action="store_true", help="also restore files changed outside the agent")
    fork = sub.add_parser("fork", help="a new session with this one's history (before --at)")
    fork.add_argument("session", help="the session ID")
    fork.add_argument("--at", metavar="MESSAGE_ID", help="fork before this message (default: after the last)")
    for parser in (listing, checkpoints, rewind, fork):
        parser.add_argument("--workspace", type=Path, default=Path.cwd(), help="workspace root (default: cwd)")
        parser.add_argument("--json", action="store_true", help="one JSON object, the wire result")


def handle(args: argparse.Namespace) -> int:
    root: Path = args.workspace
    if not root.is_dir():
        print(f"lsp-agent: --workspace {root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    from lsp_agent.app.rewind_service import RewindError

    try:
        return _run(root.resolve(), args)
    except RewindError as exc:
        print(f"lsp-agent: {exc.kind}: {exc.message}", file=sys.stderr)
        return EXIT_USAGE if exc.kind in _USAGE_KINDS else EXIT_REFUSED


def _run(root: Path, args: argparse.Namespace) -> int:
    from lsp_agent.app.rewind_service import RewindPorts, SessionRewind
    from lsp_agent.app.runtime import open_checkpoints
    from lsp_agent.core.lease import SessionLeases
    from lsp_agent.disk.applier import DiskApplier
    from lsp_agent.settings.config import load_settings
    from lsp_agent.settings.paths import workspace_dir
    from lsp_agent.store.db import Store

    base = workspace_dir(root)
    if not (base / "store.db").exists():
        print(f"lsp-agent: no sessions in workspace {root}", file=sys.stderr)
        return EXIT_USAGE
    store = Store(base / "store.db")
    try:
        if args.session_command == "list":
            # running: a live lsp-agent process (an editor, a CLI run) holds the session's lease; a stored
            # active generation alone may be one a crash left behind
            running = SessionLeases(store).held_elsewhere()
            return _out(args, {"sessions": [
                {"sessionID": s.id, "title": s.title, "model": s.model, "parentID": s.parent_id,
                 "updatedAt": s.updated_at, "state": "running" if s.id in running else "idle",
                 **({"ownerPid": running[s.id].pid} if s.id in running else {})}
                for s in store.sessions(1000)]}, _render_list)
        service = SessionRewind(RewindPorts(store, open_checkpoints(root, base, load_settings(root)),
                                            DiskApplier(root)))
        if args.session_command == "checkpoints":
            return _out(args, service.checkpoints(args.session).wire(), _render_checkpoints)
        if args.session_command == "fork":
            from lsp_agent.app.rewind_service import RewindError
            from lsp_agent.core.session_fork import ForkRefused, fork_session

            try:
                forked = fork_session(store, args.session, args.at)
            except ForkRefused as exc:
                raise RewindError(exc.kind, str(exc)) from exc
            return _out(args, {"sessionID": forked, "parentID": args.session},
                        lambda r: f"forked {r['parentID']} → {r['sessionID']}\n")
        return _rewind(args, service, store)
    finally:
        store.close()


def _rewind(args: argparse.Namespace, service: Any, store: Any) -> int:
    from lsp_agent.core.session import external_change_note
    from lsp_agent.domain.history import Message, Role
    from lsp_agent.protocol.checkpoint_models import RewindParams

    def note(session_id: str, paths: list[str], check: str | None = None) -> None:
        if paths:
            store.append_message(session_id, Message(role=Role.USER, parts=[external_change_note(paths, "", check)]))
    params = RewindParams(session_id=args.session, to_message_id=args.to, restore=args.restore or "code",
                          dry_run=args.dry_run, confirm=args.confirm)
    result = asyncio.run(service.rewind(params, None, note, note))
    _out(args, result.wire(), _render_rewind)
    return EXIT_CONFLICTS if result.kept else EXIT_OK


def _out(args: argparse.Namespace, result: dict[str, Any], render: Any) -> int:
    sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n" if args.json else render(result))
    return EXIT_OK


def _render_list(result: dict[str, Any]) -> str:
    lines = [f"{s['sessionID']} {s['state']} {s['model']} · {s['title'] or '(untitled)'}"
             + (f" (fork of {s['parentID']})" if s["parentID"] else "")
             + (f" (in lsp-agent pid {s['ownerPid']})" if s.get("ownerPid") else "") for s in result["sessions"]]
    return "\n".join(lines) + "\n" if lines else "no sessions\n"


def _render_checkpoints(result: dict[str, Any]) -> str:
    lines = [f"{c['id']} {c['phase']} step {c['step']} {c['tool']} {c['messageID'] or '-'}: "
             f"{', '.join(c['files']) or 'no change'}" + _outside(c["outside"]) for c in result["checkpoints"]]
    return "\n".join(lines) + "\n" if lines else "no checkpoints\n"


def _outside(paths: list[str]) -> str:
    return f" (outside: {', '.join(paths)})" if paths else ""


def _render_rewind(result: dict[str, Any]) -> str:
    if result["status"] == "dry_run":
        return result["diff"] or "nothing to restore\n"
    lines = [f"rewound to {result['target'] or '(nothing to restore)'}; undo with --to {result['undo']}"
             if result["undo"] else "rewound"]
    lines += [f"restored {p}" for p in result["restored"]]
    lines += [f"kept (changed outside the agent; --confirm to restore): {p}" for p in result["kept"]]
    lines += [f"not restored {p}: {why}" for p, why in {**result["unrestorable"], **result["failed"]}.items()]
    if result.get("sessionID"):
        lines.append(f"conversation forked: {result['sessionID']}")
    return "\n".join(lines) + "\n"
