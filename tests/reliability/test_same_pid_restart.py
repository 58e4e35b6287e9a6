"""A restart that gets the same pid, as in a container where the server is pid 1. Each server is killed
with SIGKILL while a steer is accepted and a queued row is steered into its running generation, and
restarts with the same pid, two ways (as root):

- fresh-namespace: each server is pid 1 of a pid namespace of its own (`unshare --pid --fork
  --mount-proc`), as when a container restarts;
- one-namespace: every server runs in one long-lived namespace and gets the same pid there
  (`ns_last_pid` set just before it starts), as when a container's init restarts its server.

A pid alone made the restarted server take its dead predecessor's write-ahead rows for its own (that
pid is alive: itself) and leave them waiting forever — both lost. With process identities, in one
namespace our own pid is only us (the nonce differs: dead at once); a process in another namespace
cannot be looked at, and its rows are judged by its session lease: once the dead one's heartbeat lapses,
the steer and the steered row are back in the queue, exactly once, after this restart and the next.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from lsp_agent.core.process_identity import ProcessIdentity
from lsp_agent.settings.paths import workspace_dir
from tests.e2e.conftest import SERVER, TIMEOUT, Editor, eventually
from tests.e2e.servers import Servers
from tests.e2e.test_lsp_queue import queue
from tests.reliability.test_session_owner import GATE_TOOL, STRICT, gated_script

IN_NEW_PID_NAMESPACE = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
#: the dead server's lease lapses this long after its last heartbeat (the shortest the setting allows)
OPTIONS: dict[str, Any] = {"limits": {"session_lease_s": 3}}


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run([*IN_NEW_PID_NAMESPACE, "sh", "-c", "echo $$"], capture_output=True, text=True,
                           check=False)
    return probe.returncode == 0 and probe.stdout.strip() == "1"


pytestmark = pytest.mark.skipif(not _unshare_works(), reason="needs `unshare --pid` (root or user namespaces)")


#: the pid every server of the one-namespace variant gets (the namespace's pid counter is set before each)
SAME_PID = 10


class ServersInOneNamespace(Servers):
    """Every server started in one long-lived pid namespace (a container that restarts its server, the
    namespace kept by its pid 1), each with the pid `SAME_PID`: `ns_last_pid` is set just before it forks."""

    def __init__(self, scripts: Path, holder: int) -> None:
        super().__init__(scripts, command=[
            "nsenter", "-t", str(holder), "-p", "-m", "--", "sh", "-c",
            f'echo {SAME_PID - 1} > /proc/sys/kernel/ns_last_pid && "$0" "$@"', *SERVER])
        self.namespace = os.readlink(f"/proc/{holder}/ns/pid")

    def _server_pid(self) -> int:
        """The server's pid as this (the host's) namespace sees it."""
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.readlink(f"/proc/{entry}/ns/pid") != self.namespace:
                    continue
                status = Path(f"/proc/{entry}/status").read_text(encoding="ascii")
            except OSError:
                continue
            nspid = next(line.split()[-1] for line in status.splitlines() if line.startswith("NSpid:"))
            if nspid == str(SAME_PID):
                return int(entry)
        raise AssertionError(f"no process with pid {SAME_PID} in the namespace")

    async def kill(self, editor: Editor) -> None:  # type: ignore[override]
        process = editor.client._server
        assert process is not None and process.returncode is None
        os.kill(self._server_pid(), signal.SIGKILL)
        await asyncio.wait_for(process.wait(), TIMEOUT)  # its shell, then nsenter, end with it
        await editor.client.stop()  # type: ignore[no-untyped-call]


@pytest_asyncio.fixture(params=["fresh-namespace", "one-namespace"])
async def servers(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Servers, int]]:
    if request.param == "fresh-namespace":
        started: Servers = Servers(tmp_path, command=[*IN_NEW_PID_NAMESPACE, *SERVER])
        yield started, 1
        await started.close()
        return
    holder = subprocess.Popen([*IN_NEW_PID_NAMESPACE, "sleep", "3600"])
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (inside := _children(holder.pid)):
            assert time.monotonic() < deadline, "the namespace's pid 1 did not start"
            time.sleep(0.02)
        started = ServersInOneNamespace(tmp_path, inside[0])
        yield started, SAME_PID
        await started.close()
    finally:
        holder.kill()
        holder.wait()


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def owners(root: Path) -> list[ProcessIdentity]:
    """The identities in the write-ahead rows (pending corrections, steered queue rows)."""
    with sqlite3.connect(workspace_dir(root) / "store.db") as db:
        rows = [r[0] for r in db.execute("SELECT owner FROM corrections")]
        rows += [r[0] for r in db.execute("SELECT steer_owner FROM queue WHERE steer_owner IS NOT NULL")]
    found = [ProcessIdentity.parse(row) for row in rows]
    assert all(found), rows
    return [identity for identity in found if identity is not None]


async def waiting_texts(editor: Editor, session_id: str) -> list[str]:
    return sorted(item["text"] for item in await queue(editor, session_id) if item["status"] == "queued")


async def test_a_steer_and_a_steered_row_survive_restarts_that_get_the_same_pid(
        servers: tuple[Servers, int], tmp_path: Path) -> None:
    started_servers, pid = servers
    root = tmp_path / "ws"
    root.mkdir()
    (root / "gate_tool.py").write_text(GATE_TOOL, encoding="utf-8")
    first = await started_servers.start(root, gated_script(), OPTIONS)
    started = await first.run("run the gate tool")
    sid, generation = started["sessionID"], started["generation"]
    await eventually(lambda: asyncio.sleep(0, (root / "tool.started").exists()), what="the tool started")

    receipt = await first.request("agent/steer", {"sessionID": sid, "expectedGeneration": generation,
                                                  "clientID": "c1", "text": "the accepted steer"})
    assert receipt["status"] == "accepted", receipt
    row = (await first.request("agent/queue/add", {"sessionID": sid, "text": "the steered row"}))["item"]
    await first.request("agent/queue/steer", {"taskID": row["id"]})
    written = owners(root)
    # two corrections written ahead (the steer, the row's) and the steered row, all by the server's pid
    assert len(written) == 3 and {o.pid for o in written} == {pid}, written
    await started_servers.kill(first)

    expected = ["the accepted steer", "the steered row"]
    for restart in ("this restart", "the next"):
        server = await started_servers.start(root, STRICT, OPTIONS)

        async def recovered(editor: Editor = server) -> bool:
            return await waiting_texts(editor, sid) == expected

        await eventually(recovered, TIMEOUT, what=f"both back in the queue after {restart}")
        assert owners(root) == []  # the write-ahead rows are settled: nothing left to recover twice
        await started_servers.kill(server)
    assert os.path.exists(root / "tool.started")
