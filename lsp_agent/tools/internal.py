"""Programs the harness runs for itself: git for list_dir, fingerprints and write detection, rg for
search_code.

Their arguments are fixed, but what they read is the repository's: its git configuration and
attributes can name programs, and any ignore or attributes file can be a FIFO that blocks the
reader forever. So each one runs inside a read-only sandbox whenever bubblewrap works (no network,
nothing of the host writable, $HOME and the harness's state hidden) on top of git's own
overrides (sandbox.git), and under a short timeout of its own (`limits.internal_timeout_s`): a
stall is the caller's classified error, and the caller answers without that program where it can.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from lsp_agent.osfiles.regular import kind_of
from lsp_agent.sandbox import Sandbox, probe
from lsp_agent.sandbox.git import repository_dirs
from lsp_agent.tools.process import ProcessOutcome, run_process

#: Files git or rg read while answering for a directory: any of them as a FIFO or device blocks
#: the reader; checked in the listed directory and each of its parents up to the root.
_CONTROL_FILES = (".gitignore", ".gitattributes", ".ignore", ".rgignore")
#: Files read once per repository, relative to the root.
_ROOT_CONTROL_FILES = (".gitmodules", ".git/info/exclude", ".git/info/attributes", ".git/index", ".git/HEAD")


class InternalStall(TimeoutError):
    """A harness-internal program did not finish in time (or a file it must read cannot be read)."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what} {why}")
        self.what = what
        self.why = why

    def __str__(self) -> str:
        return f"{self.what} {self.why}"


def _outside_home(path: Path) -> bool:
    home = Path(os.path.expanduser("~")).resolve()
    return not (path == home or home.is_relative_to(path))


def internal_sandbox(root: Path) -> Sandbox | None:
    """The read-only sandbox of the harness's own programs; None where bubblewrap cannot run (they
    then run with git's overrides and the allow-listed environment only). Blocking: the first call
    probes bubblewrap, every call looks for the repository.

    The repository may extend beyond the workspace (a subdirectory of it was opened, or a linked
    worktree whose git directory is elsewhere): its directories are shown read-only too, never
    $HOME itself or a parent of it (a home directory under Git stays hidden; git then answers as
    outside a repository)."""
    if not probe().available:
        return None
    extra = tuple(str(p) for p in repository_dirs(root) if not p.is_relative_to(root) and _outside_home(p))
    return Sandbox(root, "read-only", readable_roots=extra)


def blocking_control_file(root: Path, rel: str = ".") -> str | None:
    """A file git or rg would block on (not a regular file), named for the user; None when all are
    regular or absent. Checks only the names read for `rel`: deeper ones are left to the timeout."""
    directory = root if rel in ("", ".") else root / rel
    places = [directory, *[p for p in directory.parents if p == root or root in p.parents]]
    names = [place / name for place in places for name in _CONTROL_FILES]
    names += [root / name for name in _ROOT_CONTROL_FILES]
    for path in names:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            shown = path.relative_to(root).as_posix()
            return f"{shown} is {kind_of(mode)}, not a regular file"
    return None


def _before_start(root: Path, control: str | None) -> tuple[str | None, Sandbox | None]:
    """(a file the program would block on, the sandbox to run it in): one thread hop for both."""
    return (blocking_control_file(root, control) if control is not None else None), internal_sandbox(root)


async def run_internal(argv: list[str], root: Path, timeout_s: float, stdin: bytes | None = None,
                       control: str | None = ".") -> ProcessOutcome:
    """Run one harness-internal program in `root`. Raises InternalStall when a control file would
    block it (`control`: the directory whose files to check, None for none) or it outlives
    `timeout_s`; FileNotFoundError when the program is missing; GitConfigRefused as run_process."""
    what = " ".join(argv[:2])
    blocked, sandbox = await asyncio.to_thread(_before_start, root, control)
    if blocked:
        raise InternalStall(what, f"was not run: {blocked}")
    outcome = await run_process(argv, root, timeout_s, sandbox=sandbox, stdin=stdin)
    if outcome.timed_out:
        raise InternalStall(what, f"did not finish within {timeout_s:g} s (a file it reads may be a FIFO "
                                  "or a device)")
    return outcome
