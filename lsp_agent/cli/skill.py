"""`lsp-agent skill candidate propose|show|validate|promote|retire|list`.

Exit codes: 0 done (or nothing left to do), 1 a rule failed (the message names it), 2 usage
(bad arguments, a workspace or proposal file that cannot be read). Results go to stdout (one JSON
object with --json, the same shape as the agent/skill/* results), refusals to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from lsp_agent.domain.skill_records import MAX_PROPOSAL_BYTES

EXIT_OK, EXIT_RULE, EXIT_USAGE = 0, 1, 2
PROPOSAL_FIELDS = ("description", "applicability", "procedure")
FROM_SESSION_HELP = ("cite this session's latest passing verify_project result (the `sessionID` a run prints) "
                     "instead of a file's `evidence`")


class _Usage(Exception):
    pass


def add_skill_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "skill", help="skill candidates from verified work: propose, validate, promote, retire",
        description="Skill candidates (see docs/skills.md). Keep proposal files outside the worktree or in "
                    "an ignored folder, so that the clean-revision check stays meaningful.")
    kinds = parser.add_subparsers(dest="skill_kind", required=True)
    candidate = kinds.add_parser("candidate", help="manage skill candidates")
    sub = candidate.add_subparsers(dest="skill_command", required=True)

    def common(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--workspace", type=Path, default=Path.cwd(), help="workspace root (default: cwd)")
        p.add_argument("--json", action="store_true", help="print the result as one JSON object")
        return p

    propose = common(sub.add_parser(
        "propose", help="create a pending candidate from a proposal file, or from flags and a session",
        description="The evidence comes from the proposal file or, with --from-session, is that session's latest "
                    "passing verify_project result; the other fields from the file, overridden by the flags."))
    propose.add_argument("name", nargs="?", help="the candidate's name (overrides the file's)")
    propose.add_argument("--proposal", type=Path,
                         help=f"proposal JSON (strict JSON, at most {MAX_PROPOSAL_BYTES} bytes)")
    propose.add_argument("--from-session", metavar="SES", help=FROM_SESSION_HELP)
    for field in PROPOSAL_FIELDS:
        propose.add_argument(f"--{field}", help=f"the proposal's `{field}` (overrides the file's)")
    common(sub.add_parser("show", help="show one candidate")).add_argument("name")
    validate = common(sub.add_parser("validate", help="record independent evidence from another session"))
    validate.add_argument("name")
    source = validate.add_mutually_exclusive_group(required=True)
    source.add_argument("--proposal", type=Path,
                        help="JSON file with `evidence` (and optionally `name`) citing the other session's "
                             "verification")
    source.add_argument("--from-session", metavar="SES", help=FROM_SESSION_HELP)
    common(sub.add_parser("promote", help="write .lsp-agent/skills/NAME/SKILL.md")).add_argument("name")
    common(sub.add_parser("retire", help="remove the candidate's own, unchanged SKILL.md")).add_argument("name")
    common(sub.add_parser("list", help="list candidates and the skills the agent sees"))
    return parser


def _read_proposal(path: Path) -> bytes:
    """The file's bytes, read only up to one byte past the limit (the size rule names the excess)."""
    try:
        with path.open("rb") as handle:
            return handle.read(MAX_PROPOSAL_BYTES + 1)
    except OSError as exc:
        raise _Usage(f"cannot read the proposal file {path}: {exc.strerror or exc}") from None


async def _proposal_file(args: argparse.Namespace) -> bytes | None:
    if args.proposal is None:
        if args.from_session is None:
            raise _Usage(f"skill candidate {args.skill_command}: give --proposal FILE or --from-session SES")
        return None
    return await asyncio.to_thread(_read_proposal, args.proposal)


async def _run(args: argparse.Namespace) -> int:
    from lsp_agent.app.skill_wire import candidate_out, skill_out, skill_result
    from lsp_agent.settings.paths import workspace_dir
    from lsp_agent.skills.discovery import index_for
    from lsp_agent.skills.service import SkillService
    from lsp_agent.store.db import Store

    root: Path = args.workspace
    if not await asyncio.to_thread(root.is_dir):
        raise _Usage(f"--workspace {root} is not a directory")
    root = await asyncio.to_thread(root.resolve)
    store = Store(workspace_dir(root) / "store.db")
    try:
        service = SkillService(store, root)
        command = args.skill_command
        if command == "list":
            index = index_for(root)
            await asyncio.to_thread(index.refresh)
            candidates, skills = service.list(), index.skills()
            if args.json:
                print(json.dumps({"candidates": [candidate_out(c).wire() for c in candidates],
                                  "skills": [skill_out(s).wire() for s in skills]}))
            else:
                for c in candidates:
                    state = c.state.value + (" (validated)" if c.validated and c.state.value == "pending" else "")
                    print(f"candidate {c.name}  {state}  {c.description}")
                for s in skills:
                    print(f"skill {s.name}  {s.path}  {s.description}")
            return EXIT_OK
        if command == "show":
            outcome = service.show(args.name)
        elif command == "propose":
            fields = {f: getattr(args, f) for f in ("name", *PROPOSAL_FIELDS) if getattr(args, f) is not None}
            outcome = await service.propose(await _proposal_file(args), fields, args.from_session)
        elif command == "validate":
            outcome = await service.validate(args.name, await _proposal_file(args), args.from_session)
        elif command == "promote":
            outcome = await service.promote(args.name)
        elif command == "retire":
            outcome = await service.retire(args.name)
        else:
            raise _Usage(f"unknown skill command {command!r}")
    finally:
        store.close()
    if args.json:
        print(json.dumps(skill_result(outcome, root, view=command == "show").wire()))
    elif outcome.ok:
        print(outcome.message if command == "show" else outcome.line(), end="" if command == "show" else "\n")
    else:
        print(f"lsp-agent: skill {command}: {outcome.line()}", file=sys.stderr)
    return EXIT_OK if outcome.ok else EXIT_RULE


def handle_skill(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except _Usage as exc:
        print(f"lsp-agent: {exc}", file=sys.stderr)
        return EXIT_USAGE
