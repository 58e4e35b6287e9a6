"""A command that tries every way out a capability would open, and reports each outcome.

Run inside the sandbox as `python3 escape_root.py` beside a `targets.json` (home, outside, foreign,
pid: what it goes after); prints one `ESCAPE <name> <outcome>` line per attempt. It only reports:
the test decides what is a breach.
It uses nothing but the standard library and libc, as a hostile model's script would.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import stat

MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC = 1, 32, 4096, 16384
MNT_DETACH = 2
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
PTRACE_ATTACH = 16

libc = ctypes.CDLL(None, use_errno=True)


def report(name: str, outcome: str) -> None:
    print(f"ESCAPE {name} {outcome}", flush=True)


def call(result: int) -> str:
    return "ok" if result == 0 else errno.errorcode.get(ctypes.get_errno(), "E?")


def attempt(name: str, action: object) -> None:
    try:
        outcome = action() if callable(action) else str(action)
    except OSError as exc:
        outcome = errno.errorcode.get(exc.errno or 0, "E?")
    report(name, str(outcome))


def read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return "read:" + f.read().replace("\n", "|")


def write(path: str) -> str:
    with open(path, "w", encoding="utf-8") as f:
        f.write("pwned\n")
    return "written"


def capabilities() -> str:
    with open("/proc/self/status", encoding="utf-8") as f:
        lines = dict(line.split(":", 1) for line in f if line.startswith("Cap"))
    return ",".join(f"{k}={v.strip()}" for k, v in sorted(lines.items()))


def main(home: str, outside: str, foreign: str, target_pid: int) -> None:
    key = os.path.join(home, ".ssh", "id_rsa")
    precious = os.path.join(outside, "precious.txt")
    report("uid", str(os.getuid()))
    attempt("capabilities", capabilities)
    attempt("umount-home", lambda: call(libc.umount2(home.encode(), MNT_DETACH)))
    attempt("read-key-after-umount", lambda: read(key))
    attempt("remount-root-rw", lambda: call(libc.mount(b"none", b"/", None, MS_REMOUNT | MS_BIND, None)))
    attempt("remount-root-rw-plain", lambda: call(libc.mount(b"none", b"/", None, MS_REMOUNT, None)))
    attempt("umount-git", lambda: call(libc.umount2(b".git", MNT_DETACH)))
    attempt("write-git", lambda: write(".git/config"))
    attempt("remount-outside-rw", lambda: call(libc.mount(b"none", outside.encode(), None,
                                                           MS_REMOUNT | MS_BIND, None)))
    attempt("write-outside", lambda: write(precious))
    attempt("read-foreign", lambda: read(foreign))
    attempt("mknod-disk", lambda: os.mknod("disk", stat.S_IFBLK | 0o600, os.makedev(8, 0)) or "made")
    attempt("mknod-mem", lambda: os.mknod("mem", stat.S_IFCHR | 0o600, os.makedev(1, 1)) or "made")
    attempt("signal-server", lambda: os.kill(target_pid, 0) or "signalled")
    attempt("signal-scan", lambda: f"found:{sum(1 for pid in range(target_pid, target_pid + 20000) if alive(pid))}")
    attempt("ptrace-server", lambda: call(libc.ptrace(PTRACE_ATTACH, target_pid, None, None)))
    # Last: a new user and mount namespace of its own, where it holds every capability again.
    attempt("unshare", lambda: call(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS)))
    uid = os.getuid()
    for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"0 {uid} 1")):
        attempt(f"write-{os.path.basename(path)}", lambda p=path, t=text: write_text(p, t))
    attempt("nested-capabilities", capabilities)
    attempt("nested-umount-home", lambda: call(libc.umount2(home.encode(), MNT_DETACH)))
    attempt("nested-read-key", lambda: read(key))
    attempt("nested-umount-git", lambda: call(libc.umount2(b".git", MNT_DETACH)))
    os.makedirs("/tmp/escape", exist_ok=True)
    attempt("nested-bind-workspace", lambda: call(libc.mount(b".", b"/tmp/escape", None, MS_BIND, None)))
    attempt("nested-write-git-through-bind", lambda: write("/tmp/escape/.git/config"))
    os.makedirs("/tmp/escape-rec", exist_ok=True)
    attempt("nested-rbind-workspace", lambda: call(libc.mount(b".", b"/tmp/escape-rec", None, MS_BIND | MS_REC, None)))
    attempt("nested-write-git-through-rbind", lambda: write("/tmp/escape-rec/.git/config"))
    attempt("nested-remount-git-rw", lambda: call(libc.mount(b"none", b".git", None, MS_REMOUNT | MS_BIND, None)))
    attempt("nested-write-git-after-remount", lambda: write(".git/config"))
    # Covered with a tmpfs of its own, .git takes writes: they land in that tmpfs, never in the real one.
    attempt("nested-tmpfs-over-git", lambda: call(libc.mount(b"x", b".git", b"tmpfs", 0, None)))
    attempt("nested-write-git", lambda: write(".git/config"))
    attempt("nested-remount-root-rw", lambda: call(libc.mount(b"none", b"/", None, MS_REMOUNT | MS_BIND, None)))
    attempt("nested-write-outside", lambda: write(precious))
    # Every process it may signal, all at once: only its own sandbox's, if the PID namespace holds.
    attempt("kill-everything", lambda: os.kill(-1, signal.SIGKILL) or "sent")
    report("done", "yes")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True  # there, only not ours to signal: still seen through the PID namespace
    except OSError:
        return False
    return True


def write_text(path: str, text: str) -> str:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return "written"


if __name__ == "__main__":
    with open("targets.json", encoding="utf-8") as f:
        targets = json.load(f)
    main(targets["home"], targets["outside"], targets["foreign"], int(targets["pid"]))
