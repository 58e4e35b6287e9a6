"""`lsp-agent trust [--workspace DIR] [--show|--revoke] [--yes] [--json]`: the user's trust in a
workspace's own `.lsp-agent/config.toml` — what it would start, where it would send keys, what it
would widen — shown, granted or revoked. Plain `trust` shows, then asks y/N on a terminal (or trusts
with --yes); what is trusted is exactly the content shown (its hash).

Exit codes: 0 done (or nothing to trust), 1 not trusted (declined, no terminal, changed meanwhile),
2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_DECLINED, EXIT_USAGE = 0, 1, 2


def add_trust_parser(subparsers: Any, help_text: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "trust", help=help_text,
        description="A repository's own .lsp-agent/config.toml applies only its safe settings until you trust "
                    "it; trusting applies the rest (MCP servers, providers, the model, allow-lists, higher "
                    "limits) for exactly the content shown. See docs/security.md.")
    parser.add_argument("--workspace", type=Path, default=Path.cwd(), help="workspace root (default: cwd)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--show", action="store_true", help="only show the state and what is gated")
    action.add_argument("--revoke", action="store_true", help="forget the trust (gated settings ignored again)")
    parser.add_argument("--yes", action="store_true", help="trust without asking")
    parser.add_argument("--json", action="store_true", help="print the state as agent/workspaceTrust returns it")
    return parser


def render(state: dict[str, Any]) -> str:
    words = {"trusted": "trusted", "untrusted": "NOT trusted: the settings below are ignored",
             "changed": "CHANGED since you trusted it: the settings below are ignored again",
             "nothing_to_trust": "nothing to trust: its config sets only safe settings (or there is none)"}
    lines = [f"workspace {state['root']}: {words[state['state']]}"]
    if state.get("files"):
        lines.append(f"files: {', '.join(state['files'])} (sha256 {state.get('hash') or '-'})")
    for gated in state["gated"]:
        lines.append(f"  {gated['setting']}: {gated['effect']}")
    return "\n".join(lines) + "\n"


def _ask(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    sys.stderr.write(question)
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def handle_trust(args: argparse.Namespace) -> int:
    from lsp_agent.app.trust_wire import trust_state
    from lsp_agent.settings.config import inspect_workspace
    from lsp_agent.settings.workspace_trust import TrustChanged, revoke, trust

    root: Path = args.workspace
    if not root.is_dir():
        print(f"lsp-agent: --workspace {root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    if args.revoke:
        revoke(root)  # whatever the files hold now: a broken config must not keep an old trust alive
    view = inspect_workspace(root)
    if view.error is not None:
        print(f"lsp-agent: {view.error}", file=sys.stderr)
        return EXIT_USAGE
    code = EXIT_OK
    if not (args.revoke or args.show) and view.state in ("untrusted", "changed"):
        shown = sys.stderr if args.json else sys.stdout  # --json keeps stdout to the one JSON object
        shown.write(render(trust_state(view).wire()))
        shown.flush()
        if args.yes or _ask("Trust this workspace and apply these settings? [y/N] "):
            try:
                trust(view, view.hash)  # exactly what was shown
            except TrustChanged as exc:
                print(f"lsp-agent: {exc}", file=sys.stderr)
                return EXIT_DECLINED
            view = inspect_workspace(root)
        else:
            print("lsp-agent: not trusted (use --yes where there is no terminal)", file=sys.stderr)
            code = EXIT_DECLINED
        if not args.json:
            print(f"workspace {view.root}: {view.state}")
            return code
    state = trust_state(view).wire()
    sys.stdout.write(json.dumps(state, indent=2) + "\n" if args.json else render(state))
    return code
