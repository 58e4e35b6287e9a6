"""Where a record came from: which build of lsp-agent ran it, on which machine, when.

The build is this install's package version and, when it runs from a Git checkout, that checkout's
commit. The commit is read from the checkout's files (HEAD, the ref it names, packed-refs), never
by running `git`: nothing in a repository's hooks or config runs, and the read is bounded.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lsp_agent._version import __version__

_HEX = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
#: A HEAD, ref or `.git` file is a line; packed-refs of a big repository stay far below this.
_MAX_READ = 4 * 1024 * 1024
#: Symbolic refs pointing at symbolic refs: a loop must end.
_MAX_HOPS = 5


@dataclass(frozen=True)
class Build:
    version: str
    commit: str | None  # None: not run from a checkout (an installed wheel), or the checkout is unreadable

    def describe(self) -> str:
        return f"lsp-agent {self.version}" + (f" (commit {self.commit[:12]})" if self.commit else " (no commit)")


def _read(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            return handle.read(_MAX_READ).decode("utf-8", errors="replace")
    except OSError:
        return None


def _git_dirs(checkout: Path) -> tuple[Path, Path] | None:
    """(the checkout's own git dir, the common dir holding refs); a worktree's `.git` is a file."""
    dot_git = checkout / ".git"
    if dot_git.is_dir():
        return dot_git, dot_git
    text = _read(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    own = (checkout / text.removeprefix("gitdir:").strip()).resolve()
    common_text = _read(own / "commondir")
    common = (own / common_text.strip()).resolve() if common_text else own
    return own, common


def _packed(common: Path, ref: str) -> str | None:
    text = _read(common / "packed-refs") or ""
    for line in text.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and _HEX.match(sha):
            return sha
    return None


def checkout_commit(checkout: Path) -> str | None:
    """The commit HEAD of the checkout at `checkout` names, or None when it cannot be told."""
    dirs = _git_dirs(checkout)
    if dirs is None:
        return None
    own, common = dirs
    head = (_read(own / "HEAD") or "").strip()
    for _ in range(_MAX_HOPS):
        if _HEX.match(head):
            return head
        if not head.startswith("ref:"):
            return None
        ref = head.removeprefix("ref:").strip()
        if not ref.startswith("refs/") or ".." in ref.split("/"):
            return None
        loose = _read(own / ref) or _read(common / ref)
        head = loose.strip() if loose else (_packed(common, ref) or "")
    return None


def _package_checkout() -> Path:
    return Path(__file__).resolve().parent.parent.parent


_BUILD: Build | None = None


def current_build() -> Build:
    """This process's build, found once (a driver asks for it for every record)."""
    global _BUILD
    if _BUILD is None:
        _BUILD = Build(__version__, checkout_commit(_package_checkout()))
    return _BUILD


def host_name() -> str:
    return socket.gethostname() or "unknown"


def utc_now() -> str:
    """An attempt's start, to the second, in UTC (ISO 8601 with a Z)."""
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
