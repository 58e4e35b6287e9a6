"""Run the real harness as root or as an unprivileged user, on files that user owns.

The sandbox behaves differently by who starts it (bubblewrap keeps root's capabilities unless
told otherwise), so a protection is proven under both. The unprivileged leg runs as `nobody`
through `setpriv`, with a Python interpreter that user can execute (the test's own may live
under root's private $HOME) and this checkout plus its installed packages on PYTHONPATH; its
workspace, $HOME and state are made in a fresh directory under /var/tmp, chowned to it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import lsp_agent
from tests.providers.loopback import AgentRun, agent_command

NOBODY = 65534
CHECKOUT = Path(lsp_agent.__file__).resolve().parent.parent


@dataclass(frozen=True)
class Identity:
    name: str  # "root" or "nobody"
    uid: int

    def prefix(self) -> list[str]:
        """What runs a program as this identity; nothing for the test's own."""
        if self.uid == os.getuid():
            return []
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups"]

    def python(self) -> str:
        return sys.executable if self.uid == os.getuid() else _python_for_others() or ""

    def env(self) -> dict[str, str]:
        """The base environment of a process run as this identity."""
        if self.uid == os.getuid():
            return dict(os.environ)
        paths = [str(CHECKOUT), *site.getsitepackages()]
        return {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(paths),
                "LANG": os.environ.get("LANG", "C.UTF-8")}

    def own(self, *paths: Path) -> None:
        for path in paths:
            for entry in [path, *path.rglob("*")]:
                os.chown(entry, self.uid, self.uid, follow_symlinks=False)


ROOT = Identity("root", 0)
#: as root, `nobody`; a test run by an unprivileged user is that user
UNPRIVILEGED = Identity("nobody", NOBODY) if os.getuid() == 0 else Identity("self", os.getuid())


@functools.cache
def _python_for_others() -> str | None:
    """A system interpreter of our version that `nobody` can run and that imports our packages."""
    for candidate in (f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}", "/usr/bin/python3",
                      "/usr/local/bin/python3"):
        if not os.path.isfile(candidate):
            continue
        probe = [*UNPRIVILEGED.prefix(), candidate, "-c", "import lsp_agent.sandbox, pydantic"]
        try:
            done = subprocess.run(probe, env=UNPRIVILEGED.env(), capture_output=True, timeout=60, check=False,
                                  cwd="/")
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return candidate
    return None


def skip_unless_possible(identity: Identity) -> None:
    if identity.uid == os.getuid():
        return
    if os.getuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("switching to an unprivileged user needs root and setpriv")
    if _python_for_others() is None:
        pytest.skip("no Python interpreter that the unprivileged user can run imports this checkout")


@functools.cache
def _base_dir() -> str:
    return "/var/tmp" if os.access("/var/tmp", os.W_OK) else tempfile.gettempdir()


@contextmanager
def scratch() -> Iterator[Path]:
    """A fresh directory everyone can traverse (outside /tmp: the sandbox's /tmp is private)."""
    base = Path(tempfile.mkdtemp(prefix="lsp-agent-identity-", dir=_base_dir()))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def run_cli(identity: Identity, prompt: str, workspace: Path, base_url: str, *extra: str,
                  env: dict[str, str], timeout_s: float = 180.0) -> tuple[AgentRun, int]:
    """`lsp-agent run --json` as this identity; (its outcome, its pid)."""
    argv = agent_command(prompt, workspace, base_url, "chat", "openai-compatible/m", *extra)
    argv[0] = identity.python()
    child_env = {k: v for k, v in identity.env().items() if k != "LSP_AGENT_API_KEY"}
    child_env.update(env)
    proc = await asyncio.create_subprocess_exec(*identity.prefix(), *argv, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE, env=child_env, cwd="/")
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    events = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert proc.returncode is not None
    return AgentRun(proc.returncode, events, err.decode()), proc.pid
