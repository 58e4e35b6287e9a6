"""Who a process is, in a form another process can check later: more than a pid.

A pid alone cannot tell a dead owner from a new process that got the same number — in a container
the server is pid 1 after every restart, so a restarted server took its dead predecessor's rows for
its own and left them waiting forever. An identity names the host, the boot, the pid namespace, the
pid, the process's start time (clock ticks since boot, /proc/<pid>/stat field 22) and a random
nonce of this process. Checking one gives three answers:

- `ALIVE`: our own identity, or a process on this host, boot and pid namespace that still runs with
  the same pid and start time (and, when the pid is ours, only if it is us: same nonce);
- `DEAD`: that pid is gone, or it is a different process now;
- `UNKNOWN`: another host, boot or pid namespace — a process there cannot be looked at from here;
  whoever asks decides another way (a session lease's heartbeat).

Rows written before identities existed say `pid:N`: alive while that pid exists, except our own
pid, which an earlier process must have written (this process writes identities only).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

__all__ = ["ProcessIdentity", "Verdict", "current", "describe", "process_owner", "verdict"]

PREFIX = "proc:"
_LEGACY = "pid:"
_PROC = Path("/proc")


class Verdict(StrEnum):
    ALIVE = "alive"
    DEAD = "dead"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ProcessIdentity:
    host: str
    boot: str
    pidns: str
    pid: int
    start: int | None
    nonce: str

    def token(self) -> str:
        """The identity as stored in an owner column (compact JSON after a prefix)."""
        return PREFIX + json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def parse(cls, token: str) -> ProcessIdentity | None:
        if not token.startswith(PREFIX):
            return None
        try:
            data = json.loads(token[len(PREFIX):])
            identity = cls(host=str(data["host"]), boot=str(data["boot"]), pidns=str(data["pidns"]),
                           pid=int(data["pid"]), start=None if data["start"] is None else int(data["start"]),
                           nonce=str(data["nonce"]))
        except (ValueError, KeyError, TypeError):
            return None
        return identity


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks after boot, or None when it does not exist (or /proc
    is not there). The command name in field 2 may hold spaces and parentheses: fields are counted
    after its last ')'."""
    stat = _read(_PROC / str(pid) / "stat")
    if not stat:
        return None
    fields = stat.rpartition(")")[2].split()
    try:
        return int(fields[19])  # field 22 of the whole line; 3 is the first after the name
    except (IndexError, ValueError):
        return None


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _make() -> ProcessIdentity:
    pid = os.getpid()
    return ProcessIdentity(host=socket.gethostname(), boot=_read(_PROC / "sys/kernel/random/boot_id"),
                           pidns=_pid_namespace(), pid=pid, start=start_time(pid), nonce=secrets.token_hex(8))


_current: ProcessIdentity | None = None


def _forget() -> None:
    global _current
    _current = None


# A forked child is another process: it gets its own nonce and start time when it first asks.
os.register_at_fork(after_in_child=_forget)


def current() -> ProcessIdentity:
    global _current
    if _current is None:
        _current = _make()
    return _current


def process_owner() -> str:
    """This process, as written into owner columns (leases, steered rows, pending corrections)."""
    return current().token()


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError, ValueError):
        return False
    except PermissionError:
        return True
    return True


def verdict(owner: str | None) -> Verdict:
    """Whether the process `owner` names still runs (see the module's docstring). Anything that is
    neither an identity nor a `pid:N` row names nobody: DEAD."""
    me = current()
    if not owner:
        return Verdict.DEAD
    if owner.startswith(_LEGACY):
        text = owner[len(_LEGACY):]
        if not text.isdigit() or int(text) == me.pid:
            return Verdict.DEAD
        return Verdict.ALIVE if _pid_exists(int(text)) else Verdict.DEAD
    other = ProcessIdentity.parse(owner)
    if other is None:
        return Verdict.DEAD
    if other == me:
        return Verdict.ALIVE
    if (other.host, other.boot, other.pidns) != (me.host, me.boot, me.pidns):
        return Verdict.UNKNOWN
    if other.pid == me.pid:
        return Verdict.DEAD  # our pid, but not us: an earlier process of this namespace
    if other.start is None:  # written where /proc could not be read: the pid is all there is
        return Verdict.ALIVE if _pid_exists(other.pid) else Verdict.DEAD
    running = start_time(other.pid)
    if running is None:  # not there — or hidden from us (/proc mounted hidepid): the pid alone decides
        return Verdict.ALIVE if _pid_exists(other.pid) else Verdict.DEAD
    return Verdict.ALIVE if running == other.start else Verdict.DEAD


def describe(owner: str | None) -> tuple[int | None, str | None]:
    """(pid, host) of an owner, for messages; what a legacy row or garbage does not say is None."""
    if owner and owner.startswith(_LEGACY) and owner[len(_LEGACY):].isdigit():
        return int(owner[len(_LEGACY):]), None
    identity = ProcessIdentity.parse(owner or "")
    return (identity.pid, identity.host) if identity is not None else (None, None)
