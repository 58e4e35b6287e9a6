"""Can bubblewrap run here? Asked once per process; the answer says why not when it cannot.

`LSP_AGENT_BWRAP` names the bwrap program (tests point it at a missing file to exercise the
no-sandbox path for real); by default it is found on PATH.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

PROGRAM_ENV = "LSP_AGENT_BWRAP"
_PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Probe:
    available: bool
    program: str | None  # the bwrap executable, when found
    reason: str  # why it is unavailable ("" when available)


def _find_program() -> str | None:
    named = os.environ.get(PROGRAM_ENV)
    if named:
        return named if os.path.isfile(named) and os.access(named, os.X_OK) else None
    return shutil.which("bwrap")


@functools.cache
def probe() -> Probe:
    """Run the smallest sandbox with every namespace we use; blocking, cached for the process."""
    program = _find_program()
    if program is None:
        where = os.environ.get(PROGRAM_ENV) or "PATH"
        return Probe(False, None, f"bubblewrap (bwrap) is not installed (looked in {where})")
    argv = [program, "--die-with-parent", "--new-session", "--unshare-all", "--ro-bind", "/", "/",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--", "true"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=_PROBE_TIMEOUT_S, env={"PATH": os.defpath},
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, program, f"bubblewrap could not be started ({exc})")
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = detail[-1] if detail else f"exit {done.returncode}"
        return Probe(False, program, f"bubblewrap cannot create namespaces here ({why})")
    return Probe(True, program, "")
