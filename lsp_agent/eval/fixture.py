"""A fresh Git fixture per attempt: the task's files, committed once.

Git runs with the operator's global and system config switched off (no hooks,
no signing, no templates of theirs) and with fixed author dates, so the same
task files always give the same commit and nothing outside the manifest
changes what the agent starts from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lsp_agent.eval.manifest import Task

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "lsp-agent eval",
    "GIT_AUTHOR_EMAIL": "eval@localhost",
    "GIT_COMMITTER_NAME": "lsp-agent eval",
    "GIT_COMMITTER_EMAIL": "eval@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_TERMINAL_PROMPT": "0",
}


class FixtureError(Exception):
    pass


@dataclass(frozen=True)
class AttemptDir:
    """`base/work` is the fixture (the agent's workspace); `base/state` the agent's private state."""

    base: Path

    @property
    def work(self) -> Path:
        return self.base / "work"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def agent_log(self) -> Path:
        return self.base / "agent.stderr"

    def remove(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def _git(args: list[str], cwd: Path) -> None:
    env = {**os.environ, **_GIT_ENV}
    try:
        # Own session: a Ctrl-C at the terminal is the runner's to handle, not git's to die of.
        done = subprocess.run(["git", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=60, check=False, start_new_session=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FixtureError(f"git {args[0]} failed: {exc}") from exc
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise FixtureError(f"git {args[0]} exited {done.returncode}: {detail[-1] if detail else ''}")


def build_fixture(task: Task, label: str) -> AttemptDir:
    """Create a temp dir holding a Git repository with the task's files in one commit (blocking)."""
    try:
        base = Path(tempfile.mkdtemp(prefix=f"lsp-agent-eval-{label}-")).resolve()
    except OSError as exc:
        raise FixtureError(f"cannot create a temp dir: {exc}") from exc
    attempt = AttemptDir(base)
    try:
        attempt.work.mkdir()
        attempt.state.mkdir()
        for item in task.files:
            target = attempt.work / item.path
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("x", encoding="utf-8", newline="") as handle:  # exclusive: never follow or reuse
                handle.write(item.content)
        _git(["init", "-q", "-b", "main"], attempt.work)
        _git(["add", "-A"], attempt.work)
        _git(["commit", "-q", "--no-verify", "--no-gpg-sign", "-m", f"eval fixture: {task.id}"], attempt.work)
    except OSError as exc:
        attempt.remove()
        raise FixtureError(f"cannot write the fixture: {exc}") from exc
    except BaseException:
        attempt.remove()
        raise
    return attempt
