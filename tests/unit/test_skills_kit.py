"""Building blocks for the skill tests (no tests here): a real Git project, real verify_project runs
through the loop with the scripted provider, and the citations they leave in the store."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from lsp_agent.app.runtime import open_environment
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from lsp_agent.domain.history import TextPart, ToolResultPart
from lsp_agent.providers.scripted import Script, ScriptedProvider, ScriptedReply
from lsp_agent.settings.config import load_settings
from lsp_agent.settings.paths import workspace_dir
from lsp_agent.skills.service import SkillService
from lsp_agent.store.db import Store
from tests.helpers import RecordingSink, call, git_repo, reply, run_script

PY = sys.executable


def pytest_check(target: str = "test_calc.py") -> dict[str, Any]:
    """Real pytest on `target`, without the plugins this environment installs (they take seconds
    to load and the tiny project needs none)."""
    program = ("import os, sys; os.environ['PYTEST_DISABLE_PLUGIN_AUTOLOAD'] = '1'; import pytest; "
               f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', {target!r}]))")
    return {"verify": [{"kind": "test", "parser": "pytest", "argv": [PY, "-c", program]}]}


PYTEST = pytest_check()
#: A quick check that executes (exit code only), for tests about other rules.
QUICK = {"verify": [{"kind": "test", "parser": "generic",
                     "argv": [PY, "-c", "import calc; assert calc.add(2, 3) == 5"]}]}

CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n"
GITIGNORE = "__pycache__/\nproposals/\n"


def project(root: Path, extra: dict[str, str] | None = None) -> Path:
    return git_repo(root, {".gitignore": GITIGNORE, "calc.py": CALC, "test_calc.py": TEST_CALC, **(extra or {})})


def git(root: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args]
    return subprocess.run(cmd, cwd=root, check=True, capture_output=True, text=True).stdout


def commit_all(root: Path, message: str = "change") -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


async def verify_in_new_session(root: Path, tools: dict[str, Any] | None = None,
                                calls: list[Any] | None = None) -> dict[str, str]:
    """Run a real session whose model calls verify_project; the citation of its (last) result."""
    replies = [reply(c) for c in (calls or [call("verify_project")])] + [reply(text="done")]
    _, session = await run_script(root, replies, tools=tools or QUICK)
    for message in reversed(session.history):
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                return {"sessionID": session.id, "messageID": message.id, "partID": part.id}
    raise AssertionError("no tool result in the session")


async def verify_results_of_one_session(root: Path, count: int) -> list[dict[str, str]]:
    """One session calling verify_project `count` times: the citations of every result."""
    replies = [reply(call("verify_project")) for _ in range(count)] + [reply(text="done")]
    _, session = await run_script(root, replies, tools=QUICK)
    return [{"sessionID": session.id, "messageID": m.id, "partID": p.id}
            for m in session.history for p in m.parts if isinstance(p, ToolResultPart)]


def copy_session(source_root: Path, target_root: Path, session_id: str) -> None:
    """Copy a session's rows (with its own workspace column) into another workspace's store."""
    source, target = store_for(source_root), store_for(target_root)
    try:
        for table, key in (("sessions", "id"), ("messages", "session_id"), ("parts", "session_id")):
            for row in source.db.execute(f"SELECT * FROM {table} WHERE {key}=?", (session_id,)):
                columns = row.keys()
                target.db.execute(f"INSERT INTO {table}({','.join(columns)}) VALUES ({','.join('?' * len(columns))})",
                                  tuple(row))
    finally:
        source.close()
        target.close()


def text_part_citation(root: Path, session_id: str) -> dict[str, str]:
    """The citation of the session's final text reply (a sentence of success, not evidence)."""
    store = store_for(root)
    try:
        for message in reversed(store.messages(session_id)):
            for part in message.parts:
                if isinstance(part, TextPart) and part.text:
                    return {"sessionID": session_id, "messageID": message.id, "partID": part.id}
    finally:
        store.close()
    raise AssertionError("no text part in the session")


def store_for(root: Path) -> Store:
    return Store(workspace_dir(root) / "store.db")


def service(root: Path) -> SkillService:
    return SkillService(store_for(root), root)


def proposal(name: str, evidence: dict[str, str], **fields: Any) -> str:
    body = {"name": name, "description": "Run the calc tests", "applicability": "When calc.py changes.",
            "procedure": "1. Edit calc.py.\n2. Run verify_project.", "evidence": evidence}
    body.update(fields)
    return json.dumps(body)


def edit_part(root: Path, part_id: str, change: Any) -> None:
    """Rewrite a stored part's JSON in place (what a buggy or hostile writer could do)."""
    db = sqlite3.connect(str(workspace_dir(root) / "store.db"))
    try:
        data = json.loads(db.execute("SELECT data FROM parts WHERE id=?", (part_id,)).fetchone()[0])
        change(data)
        db.execute("UPDATE parts SET data=? WHERE id=?", (json.dumps(data), part_id))
        db.commit()
    finally:
        db.close()


def visible(request: Any) -> str:
    """What the model reads of a request: the instructions and every message's text (skills are
    announced in an appended message, never in the instructions)."""
    return "\n".join([request.instructions, *(m.text() for m in request.messages)])


async def run_recorded(root: Path, replies: list[ScriptedReply]) -> tuple[ScriptedProvider, AgentSession]:
    provider = ScriptedProvider(Script(label="test", replies=replies), record_requests=True)
    env = open_environment(root, load_settings(root, {"tools": QUICK}), provider, RecordingSink())
    session = AgentSession(env)
    await Generation(session).run("do the task")
    env.store.close()
    return provider, session


async def validated(root: Path, name: str = "calc-tests") -> tuple[SkillService, dict[str, str], dict[str, str]]:
    """A candidate proposed on one session's verification and validated by another's."""
    svc = service(root)
    source = await verify_in_new_session(root)
    proposed = await svc.propose(proposal(name, source))
    assert proposed.ok, proposed.line()
    other = await verify_in_new_session(root)
    checked = await svc.validate(name, json.dumps({"evidence": other}))
    assert checked.ok, checked.line()
    return svc, source, other
