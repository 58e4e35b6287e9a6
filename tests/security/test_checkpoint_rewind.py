"""A scripted run's every message can be taken back: the files as they were just before it.

Two runs in one session: an edit, a command that creates one file and deletes another (and writes
Git-ignored build output), then more edits and a command. Rewinding to each message restores exactly
the tree seen when the model was asked for that message (every file hashed); the user's .git is
byte-identical throughout; a file changed outside the agent is a conflict, kept until confirmed.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsp_agent.checkpoints.rewind import rewind
from lsp_agent.checkpoints.workspace import WorkspaceCheckpoints
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from lsp_agent.domain.history import Role
from lsp_agent.domain.ports import ModelRequest, ProviderEvent
from lsp_agent.providers.scripted import Script, ScriptedProvider
from tests.helpers import call, git_repo, make_env, reply
from tests.security.conftest import needs_bwrap

pytestmark = needs_bwrap


def workspace_hash(root: Path) -> str:
    """Every file but .git and the Git-ignored build/ (never restored): path, bytes, link target."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in (".git", "build"):
            continue
        digest.update(str(rel).encode() + b"\0")
        if path.is_symlink():
            digest.update(b"L" + str(path.readlink()).encode())
        elif path.is_file():
            digest.update(path.read_bytes() + b"\0" + oct(path.stat().st_mode & 0o111).encode())
    return digest.hexdigest()


def dir_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


class TreeWatchingProvider(ScriptedProvider):
    """The scripted model, noting the workspace each time it is asked for a reply: that is the tree
    just before the message it is about to produce."""

    def __init__(self, script: Script, root: Path) -> None:
        super().__init__(script)
        self.root = root
        self.trees: list[str] = []

    async def stream(self, request: ModelRequest, body: bytes | None = None) -> AsyncIterator[ProviderEvent]:
        self.trees.append(workspace_hash(self.root))
        async for event in super().stream(request, body):
            yield event


def cmd(code: str) -> Any:
    return call("run_command", command="python3 -c " + shlex.quote(code))


SCRIPT = [
    # run 1: an edit, then a command creating c.txt (and ignored build output) and deleting b.txt
    reply(call("apply_patch", path="a.txt", old_text="alpha\n", new_text="alpha two\n")),
    reply(cmd("import os, pathlib; pathlib.Path('c.txt').write_text('made by a command\\n'); os.remove('b.txt'); "
              "os.makedirs('build', exist_ok=True); pathlib.Path('build/out.bin').write_bytes(b'\\0' * 64)")),
    reply(text="run one done"),
    # run 2: a new file, another edit, a command rewriting c.txt and a file in a new directory
    reply(call("write_file", path="d/new.py", content="print('new')\n")),
    reply(call("apply_patch", path="src/m.py", old_text="x = 1\n", new_text="x = 2\n")),
    reply(cmd("import pathlib; pathlib.Path('c.txt').write_text('rewritten\\n'); "
              "pathlib.Path('e').mkdir(); pathlib.Path('e/f.txt').write_text('f\\n')")),
    reply(text="run two done"),
]


async def two_runs(root: Path) -> tuple[AgentSession, TreeWatchingProvider, WorkspaceCheckpoints]:
    env = make_env(root, [])
    provider = TreeWatchingProvider(Script(label="rewind", replies=SCRIPT), root)
    env.provider = provider
    session = AgentSession(env)
    for prompt in ("first run", "second run"):
        result = await Generation(session).run(prompt)
        assert result.stop_reason.value == "final", result
    assert isinstance(env.checkpoints, WorkspaceCheckpoints)
    return session, provider, env.checkpoints


def expected_trees(session: AgentSession, provider: TreeWatchingProvider) -> dict[str, str]:
    """message id -> the tree just before its effects. Any other message than the model's (a prompt,
    a step's results): the tree the model saw when asked for the next one."""
    messages = session.env.store.messages(session.id)
    assistants = [m for m in messages if m.role is Role.ASSISTANT]
    assert len(assistants) == len(provider.trees) == len(SCRIPT)
    by_message = {m.id: tree for m, tree in zip(assistants, provider.trees, strict=True)}
    for index, message in enumerate(messages):
        if message.role is not Role.ASSISTANT:  # a prompt, or the results of a step already run
            following = next(m for m in messages[index:] if m.role is Role.ASSISTANT)
            by_message[message.id] = by_message[following.id]
    return by_message


def fixture_repo(root: Path) -> Path:
    return git_repo(root, {"a.txt": "alpha\n", "b.txt": "bravo\n", "src/m.py": "x = 1\n", ".gitignore": "build/\n"})


async def test_every_message_rewinds_to_exactly_its_tree_and_git_is_untouched(tmp_path: Path) -> None:
    root = fixture_repo(tmp_path / "ws")
    git_before = dir_hash(root / ".git")
    session, provider, checkpoints = await two_runs(root)
    expected = expected_trees(session, provider)
    assert len(set(expected.values())) >= 5  # the runs did change the tree step by step
    ids = [m.id for m in session.env.store.messages(session.id)]
    # every message, newest first then oldest first: each rewind starts from another rewind's tree
    for target in [*reversed(ids), *ids]:
        outcome = await rewind(checkpoints, session.id, target, ids, dry_run=False, confirm=False)
        assert outcome.kept == [] and outcome.failed == {}
        assert workspace_hash(root) == expected[target], target
    assert (root / "build" / "out.bin").exists()  # Git-ignored output is neither restored nor deleted
    assert dir_hash(root / ".git") == git_before


async def test_a_rewind_can_be_rewound(tmp_path: Path) -> None:
    root = fixture_repo(tmp_path / "ws")
    session, _, checkpoints = await two_runs(root)
    ids = [m.id for m in session.env.store.messages(session.id)]
    end = workspace_hash(root)
    outcome = await rewind(checkpoints, session.id, ids[0], ids, dry_run=False, confirm=False)
    assert workspace_hash(root) != end and (root / "b.txt").read_text() == "bravo\n"
    again = await rewind(checkpoints, session.id, outcome.checkpoint, ids, dry_run=False, confirm=False)
    assert workspace_hash(root) == end and again.restored


async def test_dry_run_shows_the_diff_and_changes_nothing(tmp_path: Path) -> None:
    root = fixture_repo(tmp_path / "ws")
    session, _, checkpoints = await two_runs(root)
    ids = [m.id for m in session.env.store.messages(session.id)]
    end = workspace_hash(root)
    outcome = await rewind(checkpoints, session.id, ids[0], ids, dry_run=True, confirm=False)
    assert workspace_hash(root) == end
    assert "-alpha two\n+alpha\n" in outcome.plan.diff
    assert "--- /dev/null\n+++ b/b.txt\n" in outcome.plan.diff  # the deleted file comes back
    assert "--- a/d/new.py\n+++ /dev/null\n" in outcome.plan.diff  # the created one goes
    assert sorted(outcome.plan.restore) == ["a.txt", "b.txt", "c.txt", "d/new.py", "e/f.txt", "src/m.py"]


async def test_an_outside_edit_is_a_conflict_kept_until_confirmed(tmp_path: Path) -> None:
    root = fixture_repo(tmp_path / "ws")
    session, _, checkpoints = await two_runs(root)
    ids = [m.id for m in session.env.store.messages(session.id)]
    (root / "a.txt").write_text("the user's own work\n")
    outcome = await rewind(checkpoints, session.id, ids[0], ids, dry_run=False, confirm=False)
    assert outcome.plan.conflicts == ["a.txt"] and outcome.kept == ["a.txt"]
    assert (root / "a.txt").read_text() == "the user's own work\n"
    assert (root / "b.txt").read_text() == "bravo\n" and not (root / "c.txt").exists()
    confirmed = await rewind(checkpoints, session.id, ids[0], ids, dry_run=False, confirm=True)
    assert "a.txt" in confirmed.restored and (root / "a.txt").read_text() == "alpha\n"
    # the user's work is not lost: the rewind before it recorded it, and rewinding that brings it back
    await rewind(checkpoints, session.id, confirmed.checkpoint, ids, dry_run=False, confirm=True)
    assert (root / "a.txt").read_text() == "the user's own work\n"


async def test_checkpoints_survive_a_restart(tmp_path: Path) -> None:
    root = fixture_repo(tmp_path / "ws")
    session, provider, checkpoints = await two_runs(root)
    ids = [m.id for m in session.env.store.messages(session.id)]
    expected = expected_trees(session, provider)
    reopened = WorkspaceCheckpoints(root, checkpoints.base, checkpoints.settings)
    assert [r.id for r in reopened.records(session.id)] == [r.id for r in checkpoints.records(session.id)]
    await rewind(reopened, session.id, ids[0], ids, dry_run=False, confirm=False)
    assert workspace_hash(root) == expected[ids[0]]
