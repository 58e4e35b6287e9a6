"""The bubblewrap command line for one sandboxed process.

Mount order matters (later mounts cover earlier ones): the whole root read-only, a fresh /dev
and /proc (own PID namespace: the server and its environment are invisible), $HOME and /run
replaced by empty tmpfs, the toolchain and the user's readable roots bound back read-only, a
private /tmp, then the workspace (writable in workspace-write) with .git/ and .lsp-agent/ bound
read-only over it.

Run as root, bubblewrap would hand every capability of the server to the command, and with them
the power to unmount or remount all of the above; so as root the command gets none.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Mode = Literal["read-only", "workspace-write", "danger-full-access"]
#: the command's $HOME when the user's cannot be hidden and reused (missing, a file, unset, or /):
#: an empty directory in the sandbox's private /tmp, gone with the sandbox
PRIVATE_HOME = Path("/tmp/home")
PROTECTED_IN_WORKSPACE = (".git", ".lsp-agent")


@dataclass(frozen=True)
class MountPlan:
    """What a sandboxed process sees; the inputs of `bwrap_argv`, computed on the server side."""

    root: Path  # the workspace, resolved
    mode: Mode
    network: bool
    home: Path | None  # an existing directory, hidden behind an empty tmpfs; None: the command gets PRIVATE_HOME
    readable: tuple[Path, ...] = ()  # bound read-only again (toolchains, the user's readable roots)
    masked: tuple[Path, ...] = ()  # covered with an empty tmpfs (the harness's own state)
    protected: tuple[Path, ...] = field(default=())  # workspace entries kept read-only
    other_homes: tuple[Path, ...] = ()  # the account's home when $HOME names another: hidden too


def _within(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def toolchain_paths(programs: Iterable[str], path_env: str, *homes: Path | None) -> list[Path]:
    hidden = tuple(home for home in homes if home is not None)
    return list(_toolchain_paths(tuple(programs), path_env, hidden, os.environ.get("PYENV_ROOT")))


@functools.lru_cache(maxsize=64)
def _toolchain_paths(programs: tuple[str, ...], path_env: str, homes: tuple[Path, ...],
                     pyenv: str | None) -> tuple[Path, ...]:
    """Directories a command's interpreter or program needs, when they would be hidden under $HOME.

    Python here may be a pyenv shim under $HOME: its prefix, base prefix, pyenv root and the
    prefix of each program found by name on PATH are bound back read-only, never $HOME itself.
    """
    interpreter = Path(os.path.realpath(sys.executable)).parent.parent
    candidates: list[Path] = [Path(sys.prefix), Path(sys.base_prefix), interpreter]
    if pyenv:
        candidates.append(Path(pyenv))
    else:
        candidates += [home / ".pyenv" for home in homes]
    for program in programs:
        # Only a bare name, found on the user's own PATH: a path names whatever directory its author
        # chose (a repository's verify command could name ~/.cargo/bin/cargo to have ~/.cargo, its
        # credentials included, bound into the sandbox). A program given by path runs only where the
        # sandbox already shows it (the workspace, the system, the harness's own interpreter).
        found = shutil.which(program, path=path_env) if "/" not in program else None
        if found:
            real = Path(os.path.realpath(found))
            candidates += [Path(os.path.abspath(found)).parent, real.parent.parent]
    for entry in path_env.split(os.pathsep):
        if entry:
            candidates.append(Path(entry))
    kept: list[Path] = []
    for candidate in candidates:
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):
            continue
        # Never bind $HOME or anything above it back: that would undo hiding it.
        if any(_within(home, resolved) for home in homes):
            continue
        if resolved == Path("/") or not resolved.is_dir():
            continue
        # Only what a tmpfs would hide needs binding back; everything else is in the read-only root.
        hidden = _within(resolved, Path("/tmp")) or any(_within(resolved, home) for home in homes)
        if hidden:
            kept.append(resolved)
    # A directory inside another kept one is bound with it.
    return tuple(sorted(p for p in set(kept) if not any(o != p and _within(p, o) for o in kept)))


def privilege_flags(as_root: bool) -> list[str]:
    """What takes root's powers away inside the sandbox; nothing to take from anyone else.

    bubblewrap started by root keeps root's capabilities for the command (an unprivileged caller's
    are dropped by bubblewrap itself), and CAP_SYS_ADMIN alone undoes every mount below: unmount
    the tmpfs over $HOME, remount / read-write. `--cap-drop ALL` empties the command's capability
    sets (no_new_privs, which bubblewrap always sets, keeps an exec from getting them back). The
    user namespace is a second wall where the kernel allows one: it empties the bounding set too,
    and the sandbox's namespaces then belong to it instead of the host's. It still maps root to
    root (bubblewrap maps the caller's own uid), so files stay owned as before; without
    CAP_DAC_OVERRIDE root reads and writes only where the file modes let uid 0 do so.
    """
    return ["--unshare-user-try", "--cap-drop", "ALL"] if as_root else []


def _homes_outside_tmp(plan: MountPlan) -> list[Path]:
    """The homes the private /tmp does not hide, parents first so a child's tmpfs is not covered."""
    homes = [h for h in (plan.home, *plan.other_homes) if h is not None and h != Path("/")]
    return sorted((h for h in homes if not _within(h, Path("/tmp"))), key=lambda h: len(h.parts))


#: how bubblewrap says it failed itself: one line on stderr, exit status 1
_OWN_FAILURE_PREFIX = "bwrap: "
_OWN_FAILURE_STATUS = 1


def own_failure(exit_code: int | None, output: str) -> str | None:
    """bubblewrap's reason when the sandbox never ran the program (a mount it could not make, a
    program it could not execute inside), else None. Told apart from the program's own output by its
    shape alone: exit status 1 and nothing printed but one `bwrap: ` line. A check that printed just
    that line and exited 1 would pass for one that never started; that can only make a run `not_run`
    instead of `failed`, never `verified`."""
    lines = output.strip().splitlines()
    if exit_code != _OWN_FAILURE_STATUS or len(lines) != 1 or not lines[0].startswith(_OWN_FAILURE_PREFIX):
        return None
    return lines[0][len(_OWN_FAILURE_PREFIX):].strip() or None


def bwrap_argv(program: str, plan: MountPlan, cwd: Path, argv: list[str]) -> list[str]:
    as_root = 0 in (os.getuid(), os.geteuid())
    out = [program, "--die-with-parent", "--new-session", *privilege_flags(as_root), "--unshare-pid",
           "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not plan.network:
        out.append("--unshare-net")
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if os.path.isdir("/run"):
        out += ["--tmpfs", "/run"]  # sockets of other services (docker, dbus) live here
    for home in _homes_outside_tmp(plan):
        out += ["--tmpfs", str(home)]
    # Bound in path order so a parent never covers a child bound before it.
    for path in sorted(plan.readable, key=lambda p: len(p.parts)):
        if not _within(path, Path("/tmp")):
            out += ["--ro-bind", str(path), str(path)]
    out += ["--tmpfs", "/tmp"]
    # The command's $HOME must exist and be its own: the empty tmpfs over the user's, made again
    # when the private /tmp covered it, or a fresh directory there when there is none to hide.
    if plan.home is not None and _within(plan.home, Path("/tmp")):
        out += ["--tmpfs", str(plan.home)]
    elif plan.home is None:
        out += ["--dir", str(PRIVATE_HOME)]
    # Toolchains under /tmp (a venv made in a temp checkout) go back on top of the private /tmp.
    for path in sorted(plan.readable, key=lambda p: len(p.parts)):
        if _within(path, Path("/tmp")) and path != Path("/tmp"):
            out += ["--ro-bind", str(path), str(path)]
    for path in plan.masked:
        if path.is_dir() and not _within(plan.root, path) and not _within(path, plan.root):
            out += ["--tmpfs", str(path)]
    if plan.mode == "workspace-write":
        out += ["--bind", str(plan.root), str(plan.root)]
        for path in sorted(plan.protected, key=lambda p: len(p.parts)):  # a parent never covers a child
            out += ["--ro-bind", str(path), str(path)]
    else:
        out += ["--ro-bind", str(plan.root), str(plan.root)]
    out += ["--chdir", str(cwd), "--", *argv]
    return out
