"""Store faults, made real: the state directory on a tmpfs remounted read-only or filled to ENOSPC, a
file that is not a database, another process holding `BEGIN EXCLUSIVE` on store.db, the state
directory deleted while the server serves.

Each reaches the front end (the CLI's JSON lines and transcript, the language server's answers and
agent/event stream, ACP) as a classified `store_unavailable` with its reason and the run's end —
never a traceback, never an acknowledgement of something the store did not keep — and the session
is usable again once the cause is gone. Mounting needs root; the tests skip without it.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from acp import RequestError, text_block
from pygls.exceptions import JsonRpcException

from lsp_agent.providers.scripted import Script
from lsp_agent.settings.paths import workspace_dir
from tests.acp.client import RecordingClient, acp_agent, write_script
from tests.e2e.conftest import TIMEOUT, Editor
from tests.e2e.servers import Servers
from tests.e2e.test_lsp_steering import messages
from tests.helpers import call, reply
from tests.security.identity import UNPRIVILEGED, scratch, skip_unless_possible

#: a tool that runs until the test lets it finish (it creates `go`): the fault is made while it runs
GATED_TOOL = ("import os, time\nopen('tool.started', 'w').write('1')\n"
              "while not os.path.exists('go'):\n    time.sleep(0.02)\n")
#: a model that answers 400, as OpenAI-style servers do, whenever a tool call is left unanswered
STRICT = Script(label="after", replies=[reply(text="ok")], repeat_last=True, reject_unanswered_calls=True)
CANARY_STEER = "CANARY-STEER-a61f"
CANARY_QUEUED = "CANARY-QUEUED-77c2"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


# --- the faults ----------------------------------------------------------------------------------

def mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)


def remount(where: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True)


def fill(where: Path) -> Path:
    """A file that takes every free block of the file system (until ENOSPC)."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (b"\0" * 65536, b"\0" * 4096, b"\0" * 512, b"\0"):
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    finally:
        os.close(fd)
    assert os.statvfs(where).f_bavail == 0
    return filler


@pytest.fixture
def state_tmpfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """LSP_AGENT_STATE_DIR on a tmpfs of its own (unmounted, lazily, whatever the test left)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    state = tmp_path / "state-tmpfs"
    mount_tmpfs(state, "16m")
    monkeypatch.setenv("LSP_AGENT_STATE_DIR", str(state))
    try:
        yield state
    finally:
        subprocess.run(["umount", "-l", str(state)], check=False)


class LockHolder:
    """Another process holding store.db's write lock (`BEGIN EXCLUSIVE`) until told to let go."""

    def __init__(self, db: Path) -> None:
        code = ("import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                "db.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\nsys.stdin.readline()\n"
                "db.execute('COMMIT')\n")
        self.proc = subprocess.Popen([sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "locked"

    def holding(self) -> bool:
        return self.proc.poll() is None

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.close()
        assert self.proc.wait(TIMEOUT) == 0


def store_path(ws: Path) -> Path:
    return workspace_dir(ws) / "store.db"


# --- the CLI -------------------------------------------------------------------------------------

def cli_workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = write_script(tmp_path / "script.json", Script(label="t", replies=[reply(text="done")], repeat_last=True))
    return ws, script


def run_cli(ws: Path, script: Path, *extra: str, json_lines: bool = True) -> tuple[int, list[dict[str, Any]], str]:
    argv = [sys.executable, "-m", "lsp_agent", "run", "say done", "--workspace", str(ws), "--model", "scripted/t",
            "--script", str(script), *(["--json"] if json_lines else []), *extra]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, cwd="/", env=dict(os.environ))
    lines = [json.loads(line) for line in done.stdout.splitlines()] if json_lines else []
    return done.returncode, lines, done.stdout + done.stderr


def assert_store_refused(code: int, lines: list[dict[str, Any]], output: str, reason: str) -> None:
    assert "Traceback" not in output, output
    error, finish = lines[-2], lines[-1]
    assert error["type"] == "error" and error["error"]["kind"] == "store_unavailable", lines
    assert f"({reason})" in error["error"]["message"], error
    assert finish["type"] == "run_finish" and finish["stopReason"] == "error", finish
    assert finish["error"] == error["error"]
    assert code == 1


@needs_root
def test_cli_read_only_state_directory(tmp_path: Path, state_tmpfs: Path) -> None:
    ws, script = cli_workspace(tmp_path)
    remount(state_tmpfs, "ro")  # a fresh store: the directory cannot even be made
    assert_store_refused(*run_cli(ws, script), "read_only")
    remount(state_tmpfs, "rw")
    code, lines, _ = run_cli(ws, script)
    assert (code, lines[-1]["stopReason"]) == (0, "final")
    session = lines[-1]["sessionID"]
    remount(state_tmpfs, "ro")  # an existing store on a read-only mount: the transcript says why, once
    code, _, output = run_cli(ws, script, "--session", session, json_lines=False)
    assert "Traceback" not in output and code == 1, output
    assert "unavailable (read_only)" in output and "── stop: error" in output, output


@needs_root
def test_cli_full_disk_at_start(tmp_path: Path, state_tmpfs: Path) -> None:
    ws, script = cli_workspace(tmp_path)
    code, lines, _ = run_cli(ws, script)
    session = lines[-1]["sessionID"]
    filler = fill(state_tmpfs)
    assert_store_refused(*run_cli(ws, script, "--session", session), "full")
    filler.unlink()
    code, lines, _ = run_cli(ws, script, "--session", session)
    assert (code, lines[-1]["stopReason"], lines[-1]["sessionID"]) == (0, "final", session)


@needs_root
def test_cli_full_disk_before_the_store_exists(tmp_path: Path, state_tmpfs: Path) -> None:
    ws, script = cli_workspace(tmp_path)
    filler = fill(state_tmpfs)
    assert_store_refused(*run_cli(ws, script), "full")
    filler.unlink()
    code, lines, _ = run_cli(ws, script)
    assert (code, lines[-1]["stopReason"]) == (0, "final")


def test_cli_corrupt_store_is_moved_aside_never_recreated_over(tmp_path: Path) -> None:
    ws, script = cli_workspace(tmp_path)
    db = store_path(ws)
    db.parent.mkdir(parents=True)
    canary = b"CANARY-NOT-A-DATABASE " * 64
    db.write_bytes(canary)
    code, lines, output = run_cli(ws, script)
    aside = db.with_name("store.db.corrupt-1")
    assert "Traceback" not in output, output
    assert aside.read_bytes() == canary  # the damaged file is kept, byte for byte
    assert f"moved aside to {aside}" in output  # and the user is told where
    assert (code, lines[-1]["stopReason"]) == (0, "final")  # a fresh store took its place
    # A second damaged store never overwrites the first one set aside.
    db.write_bytes(b"again " * 200)
    for suffix in ("-wal", "-shm"):
        db.with_name("store.db" + suffix).unlink(missing_ok=True)
    code, lines, output = run_cli(ws, script)
    assert aside.read_bytes() == canary and db.with_name("store.db.corrupt-2").read_bytes() == b"again " * 200
    assert (code, lines[-1]["stopReason"]) == (0, "final"), output


def test_cli_locked_store_is_refused_within_the_busy_timeout(tmp_path: Path) -> None:
    ws, script = cli_workspace(tmp_path)
    code, lines, _ = run_cli(ws, script)
    session = lines[-1]["sessionID"]
    holder = LockHolder(store_path(ws))
    try:
        assert_store_refused(*run_cli(ws, script, "--session", session, "--config", "limits.store_busy_ms=200"),
                             "locked")
        assert holder.holding()
    finally:
        holder.release()
    code, lines, _ = run_cli(ws, script, "--session", session, "--config", "limits.store_busy_ms=200")
    assert (code, lines[-1]["stopReason"]) == (0, "final")


# --- the language server -------------------------------------------------------------------------

@pytest_asyncio.fixture
async def servers(tmp_path: Path) -> AsyncIterator[Servers]:
    started = Servers(tmp_path)
    yield started
    await started.close()


def server_workspace(tmp_path: Path, config: str = "") -> Path:
    ws = tmp_path / "ws"
    (ws / ".lsp-agent").mkdir(parents=True)
    (ws / "gated_tool.py").write_text(GATED_TOOL, encoding="utf-8")
    if config:
        (ws / ".lsp-agent" / "config.toml").write_text(config, encoding="utf-8")
    return ws


def gated_script() -> Script:
    """The gated tool, then (in a later run) a model that refuses any call left without its result."""
    return Script(label="gated", replies=[reply(call("run_command", command="python gated_tool.py", timeout_s=120)),
                                          reply(text="ok")], repeat_last=True, reject_unanswered_calls=True)


async def tool_started(ws: Path) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not (ws / "tool.started").exists():
        if loop.time() > deadline:
            raise AssertionError("the tool did not start")
        await asyncio.sleep(0.02)


async def refusal(editor: Editor, method: str, params: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await editor.request(method, params)
    return caught.value


def assert_unavailable(exc: JsonRpcException, reason: str) -> None:
    assert (exc.code, exc.data) == (-32010, {"kind": "store_unavailable", "status": 503}), exc
    assert f"({reason})" in str(exc), exc


def store_error(finish: dict[str, Any], reason: str) -> None:
    assert finish["stopReason"] == "error", finish
    assert finish["error"]["kind"] == "store_unavailable" and f"({reason})" in finish["error"]["message"], finish


def results_of(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for m in history for p in m["parts"] if p["type"] == "tool_result"]


@needs_root
async def test_server_full_disk_mid_run(servers: Servers, tmp_path: Path, state_tmpfs: Path) -> None:
    ws = server_workspace(tmp_path)
    editor = await servers.start(ws, gated_script())
    started = await editor.run("run the gated tool")
    sid, gen = started["sessionID"], started["generation"]
    await tool_started(ws)
    filler = fill(state_tmpfs)
    (ws / "go").write_text("", encoding="utf-8")
    store_error(await editor.finished(gen), "full")  # the end is reported though the store refused it
    assert any(e["event"]["type"] == "error" for e in editor.events if e["generation"] == gen)
    assert (await editor.request("agent/status", {"sessionID": sid}))["sessionID"] == sid
    # Still full: a new run is refused before anything reaches the model.
    assert_unavailable(await refusal(editor, "agent/run", {"prompt": "go on", "sessionID": sid}), "full")

    filler.unlink()
    again = await editor.run("go on", sessionID=sid)  # same server: the call is answered before the request
    assert (await editor.finished(again["generation"]))["stopReason"] == "final"
    [result] = results_of(await messages(editor, sid))
    assert not result["ok"] and "store could not record it" in result["output"]

    await servers.kill(editor)
    second = await servers.start(ws, STRICT)
    after = await second.run("and again", sessionID=sid)
    assert (await second.finished(after["generation"]))["stopReason"] == "final"
    assert len(results_of(await messages(second, sid))) == 1


@needs_root
async def test_server_full_disk_after_restart_repairs_on_load(servers: Servers, tmp_path: Path,
                                                              state_tmpfs: Path) -> None:
    ws = server_workspace(tmp_path)
    editor = await servers.start(ws, gated_script())
    started = await editor.run("run the gated tool")
    sid, gen = started["sessionID"], started["generation"]
    await tool_started(ws)
    filler = fill(state_tmpfs)
    (ws / "go").write_text("", encoding="utf-8")
    store_error(await editor.finished(gen), "full")
    await servers.kill(editor)
    filler.unlink()
    second = await servers.start(ws, STRICT)  # never saw the fault: the repair on load answers the call
    after = await second.run("go on", sessionID=sid)
    assert (await second.finished(after["generation"]))["stopReason"] == "final"
    assert len(results_of(await messages(second, sid))) == 1


async def test_server_locked_store_never_holds_the_loop(servers: Servers, tmp_path: Path) -> None:
    ws = server_workspace(tmp_path, "[limits]\nstore_busy_ms = 300\n")
    editor = await servers.start(ws, gated_script())
    started = await editor.run("run the gated tool")
    sid, gen = started["sessionID"], started["generation"]
    await tool_started(ws)
    holder = LockHolder(store_path(ws))
    try:
        (ws / "go").write_text("", encoding="utf-8")  # its result must be written while the lock is held
        store_error(await editor.finished(gen), "locked")
        status = await editor.request("agent/status", {"sessionID": sid})  # reads: not blocked by the writer
        assert status["sessionID"] == sid and holder.holding()
        assert_unavailable(await refusal(editor, "agent/run", {"prompt": "now", "sessionID": sid}), "locked")
        assert_unavailable(await refusal(editor, "agent/queue/add", {"sessionID": sid, "text": CANARY_QUEUED}),
                           "locked")
        assert holder.holding()
    finally:
        holder.release()
    again = await editor.run("go on", sessionID=sid)
    assert (await editor.finished(again["generation"]))["stopReason"] == "final"
    history = await messages(editor, sid)
    assert len(results_of(history)) == 1
    assert CANARY_QUEUED not in json.dumps(history)
    assert (await editor.request("agent/queue/list", {"sessionID": sid}))["items"] == []


async def test_server_deleted_state_directory_acknowledges_nothing(servers: Servers, tmp_path: Path) -> None:
    ws = server_workspace(tmp_path)
    editor = await servers.start(ws, gated_script())
    started = await editor.run("run the gated tool")
    sid, gen = started["sessionID"], started["generation"]
    await tool_started(ws)
    shutil.rmtree(os.environ["LSP_AGENT_STATE_DIR"])  # a cleanup script
    steer = await refusal(editor, "agent/steer", {"sessionID": sid, "expectedGeneration": gen,
                                                  "clientID": "c-1", "text": CANARY_STEER})
    assert_unavailable(steer, "missing")
    assert_unavailable(await refusal(editor, "agent/queue/add", {"sessionID": sid, "text": CANARY_QUEUED}),
                       "missing")
    (ws / "go").write_text("", encoding="utf-8")
    store_error(await editor.finished(gen), "missing")
    steering = await editor.request("agent/steering", {"sessionID": sid})
    assert steering["receipts"] == []  # no receipt said accepted
    assert (await editor.request("agent/status", {"sessionID": sid}))["sessionID"] == sid


async def run_once_the_store_is_back(editor: Editor, prompt: str) -> dict[str, Any]:
    """agent/run until the server has opened its store (it tries again at most once a second); each
    refusal until then must be the store's classified error."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while True:
        try:
            return await editor.run(prompt)
        except JsonRpcException as exc:
            assert exc.data == {"kind": "store_unavailable", "status": 503}, exc
            assert loop.time() < deadline, "the server never opened its store"
            await asyncio.sleep(0.1)


@needs_root
@pytest.mark.parametrize("reason", ["read_only", "full"])
async def test_server_store_unusable_at_start_is_refused_then_started_without_a_restart(
        servers: Servers, tmp_path: Path, state_tmpfs: Path, reason: str) -> None:
    ws = server_workspace(tmp_path)
    if reason == "read_only":
        remount(state_tmpfs, "ro")
    else:
        filler = fill(state_tmpfs)
    editor = await servers.start(ws, STRICT)
    assert_unavailable(await refusal(editor, "agent/run", {"prompt": "hello"}), reason)
    assert_unavailable(await refusal(editor, "agent/status", {}), reason)
    if reason == "read_only":
        remount(state_tmpfs, "rw")
    else:
        filler.unlink()
    started = await run_once_the_store_is_back(editor, "hello")
    assert (await editor.finished(started["generation"]))["stopReason"] == "final"


# --- ACP -----------------------------------------------------------------------------------------

@needs_root
async def test_acp_full_store_is_a_classified_error(tmp_path: Path, state_tmpfs: Path) -> None:
    ws, script = cli_workspace(tmp_path)
    client = RecordingClient()
    filler = fill(state_tmpfs)
    async with acp_agent(client, script) as (conn, _):
        with pytest.raises(RequestError) as caught:
            await asyncio.wait_for(conn.new_session(cwd=str(ws)), TIMEOUT)
        assert caught.value.data["kind"] == "store_unavailable" and "(full)" in str(caught.value), caught.value
        filler.unlink()
        session = await asyncio.wait_for(conn.new_session(cwd=str(ws)), TIMEOUT)
        result = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("hi")]),
                                        TIMEOUT)
        assert result.stop_reason == "end_turn"



def test_the_busy_timeout_is_the_setting(tmp_path: Path) -> None:
    """The bound on how long a write holds the event loop is `limits.store_busy_ms`, as configured."""
    from lsp_agent.app.runtime import open_environment
    from lsp_agent.providers.scripted import ScriptedProvider
    from lsp_agent.settings.config import Settings

    ws, _ = cli_workspace(tmp_path)
    settings = Settings.model_validate({"model": "scripted/t", "limits": {"store_busy_ms": 250}})
    env = open_environment(ws, settings, ScriptedProvider(STRICT), RecordingSink())
    try:
        assert env.store.db.execute("PRAGMA busy_timeout").fetchone()[0] == 250  # type: ignore[attr-defined]
    finally:
        env.store.close()


class RecordingSink:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def emit(self, event: Any) -> None:
        self.events.append(event)


async def test_acp_deleted_state_directory_mid_run_ends_both_prompts_with_the_store_error(tmp_path: Path) -> None:
    """A run and a follow-up queued behind it, then the state directory goes: the run's prompt ends with
    the classified error (not an internal one), the queued prompt is refused the same way."""
    ws = server_workspace(tmp_path)
    script = write_script(tmp_path / "script.json", gated_script())
    client = RecordingClient()
    async with acp_agent(client, script) as (conn, _):
        session = await asyncio.wait_for(conn.new_session(cwd=str(ws)), TIMEOUT)
        first = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("run it")]))
        await tool_started(ws)
        second = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block(CANARY_QUEUED)]))
        await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT
        while not store_has_queued(ws, CANARY_QUEUED):  # the follow-up is on disk, behind the run
            assert loop.time() < deadline and not second.done(), "the follow-up was not queued"
            await asyncio.sleep(0.02)
        shutil.rmtree(os.environ["LSP_AGENT_STATE_DIR"])
        (ws / "go").write_text("", encoding="utf-8")
        for prompt in (first, second):
            with pytest.raises(RequestError) as caught:
                await asyncio.wait_for(prompt, TIMEOUT)
            assert caught.value.data.get("kind") == "store_unavailable", (caught.value, caught.value.data)
            assert "(missing)" in str(caught.value), caught.value


def store_has_queued(ws: Path, text: str) -> bool:
    from lsp_agent.store.db import Store

    store = Store(store_path(ws))
    try:
        return any(item.text == text for session in store.sessions() for item in store.queue_waiting(session.id))
    finally:
        store.close()


def test_cli_unwritable_state_directory_as_an_unprivileged_user() -> None:
    """Permissions, not a mount: a state directory `nobody` may not write (root's, 0755) — sqlite's
    `unable to open database file` and EACCES both read as `read_only`, as for a read-only mount."""
    skip_unless_possible(UNPRIVILEGED)
    with scratch() as base:
        ws, state = base / "ws", base / "state"
        ws.mkdir()
        state.mkdir(mode=0o755)
        script = write_script(base / "script.json", Script(label="t", replies=[reply(text="done")]))
        UNPRIVILEGED.own(ws)
        argv = [UNPRIVILEGED.python(), "-m", "lsp_agent", "run", "say done", "--workspace", str(ws), "--model",
                "scripted/t", "--script", str(script), "--json"]
        env = {**UNPRIVILEGED.env(), "LSP_AGENT_STATE_DIR": str(state), "HOME": str(ws),
               "XDG_CONFIG_HOME": str(ws / ".config")}
        done = subprocess.run([*UNPRIVILEGED.prefix(), *argv], capture_output=True, text=True, timeout=TIMEOUT * 4,
                              cwd="/", env=env)
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        assert_store_refused(done.returncode, lines, done.stdout + done.stderr, "read_only")


def test_cli_state_directory_deleted_mid_run(tmp_path: Path) -> None:
    """A cleanup script removes the state directory while the CLI's run executes a tool: the tool's
    result cannot be kept, and the run says so and ends — not `final` over a store that is gone."""
    ws = server_workspace(tmp_path)
    script = write_script(tmp_path / "script.json", gated_script())
    argv = [sys.executable, "-m", "lsp_agent", "run", "run the gated tool", "--workspace", str(ws), "--model",
            "scripted/t", "--script", str(script), "--json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/",
                            env=dict(os.environ))
    try:
        asyncio.run(tool_started(ws))
        shutil.rmtree(os.environ["LSP_AGENT_STATE_DIR"])
        (ws / "go").write_text("", encoding="utf-8")
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [json.loads(line) for line in out.splitlines()]
    assert_store_refused(proc.returncode, lines, out + err, "missing")
