"""The lease's liveness check as another user sees it. A process of an unprivileged user cannot signal
root's processes (`kill` answers EPERM) and, with /proc mounted `hidepid`, may not read their stat; a
check that took "cannot look" for "dead" would let it take over — and repair, and write — a session a
live root process is running. Here a real process running as `nobody` tries to take the lease of a
session this (root) test process holds, then one whose holder is dead."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lsp_agent.core.lease import SessionLeases
from lsp_agent.core.process_identity import process_owner
from lsp_agent.store.db import Store
from tests.security.identity import UNPRIVILEGED, scratch, skip_unless_possible

TRY_TO_TAKE = """
import sys
from lsp_agent.core.errors import AgentError
from lsp_agent.core.lease import SessionLeases
from lsp_agent.store.db import Store
store = Store(__import__("pathlib").Path(sys.argv[1]))
try:
    SessionLeases(store).take("ses_x")
except AgentError as exc:
    print("REFUSED", exc.kind.value, exc.holder)
else:
    print("TAKEN")
"""


#: the same process, in a mount namespace whose /proc hides other users' processes
HIDEPID = ["unshare", "--mount", "sh", "-c", 'mount -t proc -o hidepid=2 proc /proc && exec "$@"', "sh"]


def _hidepid_works() -> bool:
    probe = subprocess.run([*HIDEPID, "true"], capture_output=True, check=False)
    return probe.returncode == 0


def attempt(db: Path, hidden: bool) -> str:
    wrap = HIDEPID if hidden else []
    done = subprocess.run([*wrap, *UNPRIVILEGED.prefix(), UNPRIVILEGED.python(), "-c", TRY_TO_TAKE, str(db)],
                          env=UNPRIVILEGED.env(), capture_output=True, text=True, timeout=60, check=False, cwd="/")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("hidden", [False, True], ids=["proc", "proc-hidepid"])
def test_an_unprivileged_process_cannot_take_over_a_live_root_holders_session(hidden: bool) -> None:
    if UNPRIVILEGED.uid == 0:
        pytest.skip("needs an unprivileged user")
    skip_unless_possible(UNPRIVILEGED)
    if hidden and not _hidepid_works():
        pytest.skip("cannot mount a hidepid /proc here")
    with scratch() as base:
        db = base / "store.db"
        store = Store(db)
        store.create_session("ses_x", str(base), "m")
        assert SessionLeases(store).take("ses_x")  # this root process holds it
        store.close()
        UNPRIVILEGED.own(base)
        assert attempt(db, hidden).startswith("REFUSED session_busy"), "a live root holder was taken for dead"
        store = Store(db)
        assert store.lease("ses_x").owner == process_owner()
        store.release_lease("ses_x", process_owner())
        store.acquire_lease("ses_x", "pid:999999999", 0, 30_000, lambda _: True)  # a holder that died
        store.close()
        assert attempt(db, hidden) == "TAKEN"
