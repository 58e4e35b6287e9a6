"""kill -9 of the real server (`lsp-agent serve` over stdio) at seeded random points while a tool runs,
with queued rows and steers in flight; then a restart on the same workspace and state directory.

Asserted each time: the tool process died with the server; everything the server acknowledged (a run,
a queued row, a steer answered `accepted`) is in the history or waiting in the queue exactly once, and
anything in flight at the kill at most once; the interrupted call was answered as interrupted; and the
session goes on — a new run and the recovered rows all finish `final` against a model that answers
400, as OpenAI-style servers do, whenever a tool call is left unanswered.

LSP_AGENT_SOAK_KILLS=N runs N kill points (default 3; see docs/reliability.md), LSP_AGENT_SOAK_SEED
picks the seed.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from lsp_agent.providers.scripted import Script, ScriptedReply
from tests.e2e.conftest import TIMEOUT, Editor
from tests.e2e.servers import Servers
from tests.e2e.test_lsp_queue import finishes, queue, user_texts
from tests.e2e.test_lsp_steering import messages
from tests.helpers import call, reply

KILLS = max(1, int(os.environ.get("LSP_AGENT_SOAK_KILLS", "3")))
SEED = int(os.environ.get("LSP_AGENT_SOAK_SEED", "14"))
#: a tool that outlives any test unless it dies with the server; it says its pid first
SLOW_TOOL = "import os, time\nopen('tool.pid', 'w').write(str(os.getpid()))\ntime.sleep(120)\n"


@pytest_asyncio.fixture
async def servers(tmp_path: Path) -> AsyncIterator[Servers]:
    started = Servers(tmp_path)
    yield started
    await started.close()


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (reparented zombies may wait for init)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def gone(pid: int, timeout: float = 5.0) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while alive(pid):
        if loop.time() > deadline:
            os.kill(pid, signal.SIGKILL)  # leave nothing behind, but fail
            return False
        await asyncio.sleep(0.02)
    return True


def first_script(model_delay_ms: int) -> Script:
    return Script(label="crash", replies=[
        reply(call("run_command", command="python slow_tool.py", timeout_s=120), delay_ms=model_delay_ms),
        ScriptedReply(text="never arrives", delay_ms=120_000)])


#: after the restart: any unanswered call is a 400, like an OpenAI-style server
STRICT = Script(label="after", replies=[reply(text="ok")], repeat_last=True, reject_unanswered_calls=True)


def host_pids(root: Path) -> list[int]:
    """The tool's processes as the host sees them (inside the sandbox's PID namespace the pid the tool
    writes is its own, not the host's): those running slow_tool.py in this workspace, bwrap included."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                running_tool = b"slow_tool.py" in cmdline.read()
            if running_tool and os.readlink(f"/proc/{entry}/cwd") == str(root):
                found.append(int(entry))
        except OSError:
            continue
    return found


async def all_gone(pids: list[int]) -> bool:
    return all([await gone(pid) for pid in pids])


async def tool_pids(root: Path, timeout: float = TIMEOUT) -> list[int]:
    pid_file = root / "tool.pid"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (pid_file.exists() and pid_file.read_text(encoding="ascii")):
        if loop.time() > deadline:
            raise AssertionError("the tool did not start")
        await asyncio.sleep(0.02)
    pids = host_pids(root)
    assert pids, "the running tool is not visible from the host"
    return pids


def workspace_at(base: Path, name: str) -> Path:
    root = base / name
    root.mkdir()
    (root / "slow_tool.py").write_text(SLOW_TOOL, encoding="utf-8")
    return root


async def test_the_tool_process_dies_with_the_server_and_the_call_is_answered_as_interrupted(
        servers: Servers, tmp_path: Path) -> None:
    root = workspace_at(tmp_path, "ws")
    first = await servers.start(root, first_script(0))
    await servers.warm()  # the restart's process imports while this one runs
    sid = (await first.run("start the slow tool"))["sessionID"]
    pids = await tool_pids(root)
    await servers.kill(first)
    assert await all_gone(pids), "the tool process outlived the server"

    second = await servers.start(root, STRICT)
    await servers.warm()
    history = await messages(second, sid)
    (result,) = [p for m in history for p in m["parts"] if p["type"] == "tool_result"]
    assert not result["ok"] and "interrupted" in result["output"] and "may have had effects" in result["output"]
    started = await second.run("go on", sessionID=sid)
    assert (await second.finished(started["generation"]))["stopReason"] == "final"
    # Repaired once: a second restart adds nothing.
    count = len(await messages(second, sid))
    await servers.kill(second)
    third = await servers.start(root, STRICT)
    assert len(await messages(third, sid)) == count


class Client:
    """The user's side of one kill point: what it sent and what the server acknowledged."""

    def __init__(self, editor: Editor, session_id: str, generation: str) -> None:
        self.editor = editor
        self.sid = session_id
        self.generation = generation
        self.accepted: list[str] = []
        self.in_flight: list[str] = []

    async def send(self, text: str, request: Callable[[], Awaitable[Any]],
                   acknowledged: Callable[[Any], bool]) -> None:
        self.in_flight.append(text)
        answer = await request()
        self.in_flight.remove(text)
        if acknowledged(answer):
            self.accepted.append(text)

    async def queue_add(self, text: str) -> None:
        await self.send(text, lambda: self.editor.request("agent/queue/add", {"sessionID": self.sid, "text": text}),
                        lambda answer: bool(answer["item"]["id"]))

    async def steer(self, text: str, client_id: str) -> None:
        await self.send(text, lambda: self.editor.request("agent/steer", {
            "sessionID": self.sid, "expectedGeneration": self.generation, "clientID": client_id, "text": text}),
            lambda answer: answer["status"] == "accepted")

    async def queue_and_steer(self, text: str) -> None:
        answer = await self.editor.request("agent/queue/add", {"sessionID": self.sid, "text": text})
        self.accepted.append(text)  # queued: acknowledged; the steer below moves it, never loses it
        await self.editor.request("agent/queue/steer", {"taskID": answer["item"]["id"]})


async def user_actions(client: Client, n: int) -> None:
    await client.queue_add(f"queued {n}.1")
    await client.steer(f"steer {n}.1", f"c{n}.1")
    await client.queue_and_steer(f"queued and steered {n}")
    await client.queue_add(f"queued {n}.2")
    await client.steer(f"steer {n}.2", f"c{n}.2")


@pytest.mark.parametrize("point", range(KILLS))
async def test_kill_9_at_a_random_point_loses_nothing_accepted_and_the_session_goes_on(
        servers: Servers, tmp_path: Path, point: int) -> None:
    rng = random.Random(SEED * 1000 + point)
    root = workspace_at(tmp_path, "ws")
    first = await servers.start(root, first_script(rng.randrange(0, 300)))
    await servers.warm()
    started = await first.run("first")
    client = Client(first, started["sessionID"], started["generation"])
    client.accepted.append("first")

    # The user types while the model thinks and the tool runs; the kill lands anywhere in that.
    actions = asyncio.ensure_future(user_actions(client, point))
    await asyncio.sleep(rng.uniform(0.0, 0.8))
    pid_file = root / "tool.pid"
    pids = host_pids(root) if pid_file.exists() and pid_file.read_text() else []
    await servers.kill(first)
    actions.cancel()
    await asyncio.gather(actions, return_exceptions=True)
    assert await all_gone(pids), "the tool process outlived the server"

    second = await servers.start(root, STRICT)
    sid = client.sid
    history, rows = await user_texts(second, sid), await queue(second, sid)
    waiting = [r["text"] for r in rows if r["status"] in ("queued", "paused")]
    for text in client.accepted:
        assert history.count(text) + waiting.count(text) == 1, (text, history, waiting)
    for text in client.in_flight:
        assert history.count(text) + waiting.count(text) <= 1, (text, history, waiting)
    tool_results = [p for m in await messages(second, sid) for p in m["parts"] if p["type"] == "tool_result"]
    assert all("interrupted" in p["output"] for p in tool_results)

    # The session goes on: a new run, then each recovered row in turn, all against the strict model.
    paused = [r for r in rows if r["status"] == "paused"]
    queued = [r for r in rows if r["status"] == "queued"]
    await second.run("after the restart", sessionID=sid)
    done = await finishes(second, 1 + len(queued))
    assert [f["stopReason"] for f in done] == ["final"] * (1 + len(queued)), json.dumps(done)
    history = await user_texts(second, sid)
    for text in [*client.accepted, "after the restart"]:
        left = [r["text"] for r in await queue(second, sid) if r["status"] in ("queued", "paused")]
        assert history.count(text) + left.count(text) == 1, (text, history, left)
    assert [r["text"] for r in await queue(second, sid) if r["status"] in ("queued", "paused")] == \
        [r["text"] for r in paused]
