"""The sandbox of one workspace: turns a command into what actually runs, or refuses it.

`prepare` is the single entry point for every process started for the model. When bubblewrap
cannot run and the mode is not danger-full-access, the command is refused (never run
unsandboxed silently); `needs_approval` is the hook an approval policy uses to offer running it
unsandboxed once the user agrees (`prepare(..., approved_unsandboxed=True)`).
"""

from __future__ import annotations

import functools
import os
import pwd
from dataclasses import dataclass
from pathlib import Path

from lsp_agent.sandbox.bwrap import (
    PRIVATE_HOME,
    PROTECTED_IN_WORKSPACE,
    Mode,
    MountPlan,
    bwrap_argv,
    toolchain_paths,
)
from lsp_agent.sandbox.env import command_env
from lsp_agent.sandbox.probe import Probe, probe
from lsp_agent.settings.config import Settings
from lsp_agent.settings.paths import state_dir


class SandboxRefused(OSError):
    """The command may not run: no sandbox is available and nothing approved running without one."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Prepared:
    argv: list[str]  # what to execute (bwrap ... -- argv, or argv itself)
    env: dict[str, str]
    sandboxed: bool


def unavailable_notice(found: Probe) -> str:
    return (f"lsp-agent: commands are NOT sandboxed on this machine: {found.reason}. run_command and "
            "verify_project are refused until bubblewrap works (install the `bubblewrap` package; in a "
            "container, allow user namespaces), or until you choose sandboxMode = \"danger-full-access\" "
            "(--sandbox danger-full-access) to run them without any sandbox.")


def startup_notice(mode: str) -> str | None:
    """What the user must be told once before commands run (blocking: probes bwrap once)."""
    if mode == "danger-full-access":
        return "lsp-agent: sandboxMode is danger-full-access: commands run WITHOUT any sandbox."
    found = probe()
    return None if found.available else unavailable_notice(found)


def _expand(raw: str, home: Path | None) -> Path | None:
    text = raw.strip()
    if not text:
        return None
    if text.startswith("~") and home is not None:
        text = str(home) + text[1:]
    path = Path(text)
    return path.resolve() if path.is_absolute() and path.exists() else None


def _hideable(raw: str | None) -> Path | None:
    """A home worth an empty tmpfs: an existing directory other than /.

    One that does not exist (`nobody`'s /nonexistent), names a file, or is / holds nothing to
    hide, and bubblewrap could not make a mount point for it on the read-only root anyway.
    """
    if not raw or raw == "~":
        return None
    try:
        home = Path(raw).resolve()
    except (OSError, RuntimeError):
        return None
    return home if home != Path("/") and home.is_dir() else None


def home_to_hide() -> Path | None:
    """$HOME when it is a directory to hide (and the command's $HOME, empty); else None."""
    return _hideable(os.environ.get("HOME") or os.path.expanduser("~"))


@functools.cache
def _account_home(uid: int) -> str | None:
    try:
        return pwd.getpwuid(uid).pw_dir
    except KeyError:
        return None


def account_home_to_hide(home: Path | None) -> Path | None:
    """The account's own home when $HOME names another directory (or none): its keys are there.

    Root keeps owning /root inside the sandbox, so `HOME=/elsewhere` would otherwise leave root's
    ~/.ssh readable to every command.
    """
    account = _hideable(_account_home(os.getuid()))
    return account if account is not None and account != home else None


@dataclass(frozen=True)
class Sandbox:
    root: Path
    mode: Mode
    network: bool = False
    readable_roots: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings, root: Path) -> Sandbox:
        return cls(root.resolve(), settings.sandbox_mode, settings.sandbox_network,
                   tuple(settings.sandbox_readable_roots))

    def status(self) -> Probe:
        return probe()

    def needs_approval(self) -> str | None:
        """Why a command would run unsandboxed (the approval policy's hook); None when it will be
        sandboxed or the user chose danger-full-access."""
        if self.mode == "danger-full-access":
            return None
        found = probe()
        if found.available:
            return None
        return f"no sandbox: {found.reason}"

    def prepare(self, argv: list[str], cwd: Path, extra_env: dict[str, str] | None = None,
                approved_unsandboxed: bool = False) -> Prepared:
        """Blocking (the first call probes bwrap): call it from a thread."""
        env = command_env(extra_env)
        # The user approved this very command without a sandbox (bwrap unavailable, or a re-run
        # after it failed inside the sandbox under approvalPolicy on-failure).
        if self.mode == "danger-full-access" or approved_unsandboxed:
            return Prepared(list(argv), env, sandboxed=False)
        found = probe()
        if not found.available or found.program is None:
            raise SandboxRefused(
                f"commands cannot be sandboxed here ({found.reason}) and running them without a sandbox "
                "needs the user's approval. Do not retry: inspect files with read_file, search_code and "
                "list_dir, change them with apply_patch or write_file, and tell the user that commands "
                "need bubblewrap (or sandboxMode = \"danger-full-access\").")
        plan = self.plan(argv[:1], env)
        if plan.home is None:
            env["HOME"] = str(PRIVATE_HOME)
        return Prepared(bwrap_argv(found.program, plan, cwd, list(argv)), env, sandboxed=True)

    def plan(self, programs: list[str], env: dict[str, str]) -> MountPlan:
        home = home_to_hide()
        account = account_home_to_hide(home)
        readable = toolchain_paths(programs, env.get("PATH", os.defpath), home, account)
        for raw in self.readable_roots:
            extra = _expand(raw, home)
            if extra is not None and extra not in readable:
                readable.append(extra)
        protected: list[Path] = []
        for name in PROTECTED_IN_WORKSPACE:
            entry = self.root / name
            if not os.path.lexists(entry):
                continue
            real = entry.resolve()
            if real == self.root or self.root in real.parents:
                protected.append(real)
        masked = (state_dir().resolve(),)
        return MountPlan(self.root, self.mode, self.network, home, tuple(readable), masked, tuple(protected),
                         other_homes=(account,) if account is not None else ())
