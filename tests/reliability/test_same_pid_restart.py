"""A restart that gets the same pid, as in a container where the server is pid 1: each server here runs
as pid 1 of a fresh pid namespace (`unshare --pid --fork --mount-proc`, as root), is killed with SIGKILL
while a steer is accepted and a queued row is steered into its running generation, and restarts.

A pid alone made the restarted server take its dead predecessor's write-ahead rows for its own (pid 1
is alive: itself) and leave them waiting forever — both lost. With process identities the rows of a
process in another pid namespace are judged by its session lease: once the dead one's heartbeat lapses,
the steer and the steered row are back in the queue, exactly once, after this restart and the next.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
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


@pytest_asyncio.fixture
async def servers(tmp_path: Path) -> AsyncIterator[Servers]:
    started = Servers(tmp_path, command=[*IN_NEW_PID_NAMESPACE, *SERVER])
    yield started
    await started.close()


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
        servers: Servers, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "gate_tool.py").write_text(GATE_TOOL, encoding="utf-8")
    first = await servers.start(root, gated_script(), OPTIONS)
    started = await first.run("run the gate tool")
    sid, generation = started["sessionID"], started["generation"]
    await eventually(lambda: asyncio.sleep(0, (root / "tool.started").exists()), what="the tool started")

    receipt = await first.request("agent/steer", {"sessionID": sid, "expectedGeneration": generation,
                                                  "clientID": "c1", "text": "the accepted steer"})
    assert receipt["status"] == "accepted", receipt
    row = (await first.request("agent/queue/add", {"sessionID": sid, "text": "the steered row"}))["item"]
    await first.request("agent/queue/steer", {"taskID": row["id"]})
    written = owners(root)
    # two corrections written ahead (the steer, the row's) and the steered row, all by pid 1
    assert len(written) == 3 and {o.pid for o in written} == {1}, written
    await servers.kill(first)

    expected = ["the accepted steer", "the steered row"]
    for restart in ("this restart", "the next"):
        server = await servers.start(root, STRICT, OPTIONS)

        async def recovered(editor: Editor = server) -> bool:
            return await waiting_texts(editor, sid) == expected

        await eventually(recovered, TIMEOUT, what=f"both back in the queue after {restart}")
        assert owners(root) == []  # the write-ahead rows are settled: nothing left to recover twice
        await servers.kill(server)
    assert os.path.exists(root / "tool.started")
