"""Building blocks for tests: a workspace, a scripted model, and the real core on disk ports."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

from lsp_agent.app.runtime import open_environment
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession, Environment
from lsp_agent.domain.events import RunFinish
from lsp_agent.providers.scripted import Script, ScriptedCall, ScriptedProvider, ScriptedReply
from lsp_agent.settings.config import Settings, load_settings
from lsp_agent.store.memory import MemoryStore


class RecordingSink:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def emit(self, event: Any) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


def call(name: str, raw: str | None = None, **arguments: Any) -> ScriptedCall:
    if raw is not None:
        return ScriptedCall(name=name, arguments_raw=raw)
    return ScriptedCall(name=name, arguments=arguments)


def reply(*calls: ScriptedCall, text: str = "", delay_ms: int = 0) -> ScriptedReply:
    return ScriptedReply(text=text, tool_calls=list(calls), delay_ms=delay_ms)


#: Which store `make_env` builds: "sqlite" (the real one) or "memory" (the in-memory port); the queue and
#: steering suites run against both (see the `backend` fixtures there).
BACKEND = {"store": "sqlite"}


def make_env(root: Path, replies: list[ScriptedReply], sink: RecordingSink | None = None,
             settings: Settings | None = None, **overrides: Any) -> Environment:
    settings = settings or load_settings(root, overrides)
    provider = ScriptedProvider(Script(label="test", replies=replies))
    env = open_environment(root, settings, provider, sink or RecordingSink())
    if BACKEND["store"] == "memory":
        env.store.close()
        env = replace(env, store=MemoryStore())
    return env


async def run_script(root: Path, replies: list[ScriptedReply], prompt: str = "do the task",
                     max_steps: int | None = None, sink: RecordingSink | None = None,
                     **overrides: Any) -> tuple[RunFinish, AgentSession]:
    env = make_env(root, replies, sink, **overrides)
    session = AgentSession(env)
    result = await Generation(session, max_steps).run(prompt)
    return result, session


def tree_hash(root: Path) -> str:
    """A digest of every file (path, bytes, mode) under root except .git."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if ".git" in path.relative_to(root).parts:
            continue
        h.update(str(path.relative_to(root)).encode())
        if path.is_symlink():
            h.update(b"L" + str(path.readlink()).encode())
        elif path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def git_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "fixture"], cwd=root, check=True)
    return root


def trust_workspace(root: Path) -> None:
    """The user trusts the workspace's config as it is now (as `lsp-agent trust --yes` would), for
    tests whose own fixture config sets gated settings (a model, providers, MCP servers)."""
    from lsp_agent.settings.config import inspect_workspace
    from lsp_agent.settings.workspace_trust import trust

    view = inspect_workspace(root)
    trust(view, view.hash)


def verify_config(root: Path, argv: list[str], kind: str = "test", parser: str = "generic") -> None:
    config = root / ".lsp-agent" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[[tools.verify]]\nkind = {json.dumps(kind)}\nargv = {json.dumps(argv)}\n"
                      f"parser = {json.dumps(parser)}\n", encoding="utf-8")


def make_agent(root: Path, replies: list[ScriptedReply], sink: RecordingSink | None = None,
               **overrides: Any) -> Any:
    from lsp_agent.core.agent import Agent

    return Agent(make_env(root, replies, sink, **overrides))


async def wait_for(predicate: Any, timeout: float = 30.0) -> None:
    # Generous: a loaded 2-core machine is many times slower, and a passing test never waits this long.
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


#: Python source for a process that holds an exclusive lock on `child.lock` (in its working directory)
#: for a minute, writing `locked` once it holds it. The kernel drops the lock when the process dies,
#: so `lock_released` tells from outside (across a sandbox's PID namespace too) that it is gone.
LOCK_HOLDER = ("import fcntl, pathlib, time; f = open('child.lock', 'w'); fcntl.flock(f, fcntl.LOCK_EX); "
               "pathlib.Path('locked').write_text('1'); time.sleep(60)")


def lock_released(path: Path) -> bool:
    """No process holds a lock on `path` (it exists: whoever held it is dead or let it go)."""
    import fcntl
    import os

    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing drops our own lock too
    return True


async def wait_lock_released(path: Path, timeout: float = 30.0) -> None:
    """Wait until the holder of the lock on `path` is gone; a holder that survived keeps it for 60 s."""
    assert path.exists(), f"{path} was never locked"
    await wait_for(lambda: lock_released(path), timeout)
