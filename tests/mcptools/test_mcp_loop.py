"""MCP tools through the real loop: real servers over stdio, a scripted model, the controller."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from pathlib import Path

from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from lsp_agent.core.tools import Access
from lsp_agent.domain.events import StopReason
from lsp_agent.domain.history import ErrorKind
from lsp_agent.mcp.connection import ServerState
from tests.helpers import RecordingSink, call, git_repo, reply, wait_for
from tests.mcptools.conftest import (
    everything_server,
    fault_server,
    git_server,
    mcp_env,
    results,
    run_mcp,
    time_server,
    tool_names,
)

BUILTINS = ["read_file", "list_dir", "search_code", "apply_patch", "write_file", "run_command", "verify_project",
            "read_skill"]


async def test_time_server_tool_runs_through_the_loop_and_the_tool_list_is_stable(ws: Path) -> None:
    replies = [reply(call("mcp__time__get_current_time", timezone="Etc/UTC")),
               reply(call("mcp__time__convert_time", source_timezone="Etc/UTC", time="12:00",
                          target_timezone="Asia/Tokyo")),
               reply(text="done")]
    result, session, provider = await run_mcp(ws, replies, {"time": time_server()})
    assert (result.stop_reason, result.tool_calls, result.tool_errors) == (StopReason.FINAL, 2, 0)
    first, second = results(session)
    assert first.output.startswith("OK: mcp__time__get_current_time returned 1 content block\n")
    assert '"timezone": "Etc/UTC"' in first.output
    assert "T21:00:00+09:00" in second.output and '"time_difference": "+9.0h"' in second.output
    # Built-ins first in their fixed order, then the server's tools sorted; identical on every request.
    names = tool_names(provider, 0)
    assert names == [*BUILTINS, "mcp__time__convert_time", "mcp__time__get_current_time"]
    assert all(tool_names(provider, i) == names for i in range(len(provider.requests)))
    schema = next(t for t in provider.requests[0].tools if t.name == "mcp__time__get_current_time").parameters
    assert schema["required"] == ["timezone"]  # passed through as the server wrote it


async def test_arguments_are_checked_against_the_servers_schema_before_the_call(ws: Path, tmp_path: Path) -> None:
    marker = tmp_path / "calls.txt"
    replies = [reply(call("mcp__fault__echo", text=5)), reply(call("mcp__fault__echo", text="hi", extra=1)),
               reply(call("mcp__fault__echo", raw="{not json")), reply(call("mcp__fault__nope")),
               reply(call("mcp__fault__echo", text="hi")), reply(text="done")]
    result, session, _ = await run_mcp(ws, replies, {"fault": fault_server(marker)})
    kinds = [r.error_kind for r in results(session)]
    assert kinds == [ErrorKind.PARAMETER_MISMATCH, ErrorKind.PARAMETER_MISMATCH, ErrorKind.INVALID_JSON,
                     ErrorKind.UNKNOWN_TOOL, None]
    outputs = [r.output for r in results(session)]
    assert "text: 5 is not of type 'string'" in outputs[0] and "Allowed parameters: text" in outputs[0]
    assert "'extra' was unexpected" in outputs[1]
    assert outputs[4] == "OK: mcp__fault__echo returned 1 content block\nhi"
    # Only the valid call reached the server.
    assert marker.read_text().split() == ["echo"]
    assert result.stop_reason is StopReason.FINAL


async def test_fault_server_results_errors_limits_and_a_crash_mid_call(ws: Path) -> None:
    limit = 1000
    replies = [reply(call("mcp__fault__picture")), reply(call("mcp__fault__fail")),
               reply(call("mcp__fault__huge", chars=limit)), reply(call("mcp__fault__huge", chars=limit + 1)),
               reply(call("mcp__fault__slow", seconds=30)),
               reply(call("mcp__fault__crash")),
               reply(call("mcp__fault__echo", text="still there?")),
               reply(call("read_file", path="notes.txt")),
               reply(text="done")]
    (ws / "notes.txt").write_text("the run goes on\n")
    reported: list[str] = []
    env, provider = mcp_env(ws, replies, {"fault": fault_server(toolTimeoutMs=8000, maxResultChars=limit)})
    assert env.mcp is not None
    env.mcp.report = reported.append
    session = AgentSession(env)
    try:
        result = await Generation(session).run("go")
    finally:
        await env.mcp.aclose()
    picture, fail, at_limit, past_limit, slow, crash, gone, read = results(session)
    assert picture.ok and picture.output.splitlines()[1:] == [
        "a picture:", "[image omitted: image/png, about 8 bytes; the model gets text only]",
        "[resource link] readme: file:///readme.md (text/markdown)"]
    assert (fail.ok, fail.error_kind) == (False, ErrorKind.TOOL_FAILURE)
    assert fail.output.startswith("ERROR: tool_failure: mcp__fault__fail reported an error:\nthe thing is broken")
    assert at_limit.ok and "[TRUNCATED]" not in at_limit.output and at_limit.metadata["truncated"] is False
    assert "x" * limit in at_limit.output
    assert past_limit.ok and f"the MCP result had {limit + 1} characters; showed the first {limit}" in \
        past_limit.output
    assert "x" * (limit + 1) not in past_limit.output
    assert slow.error_kind is ErrorKind.TIMEOUT and "8000 ms (toolTimeoutMs)" in slow.output
    assert crash.error_kind is ErrorKind.TOOL_FAILURE and "not available" in crash.output
    # The dead server's tools are gone from the next request on; the run goes on.
    assert gone.error_kind is ErrorKind.UNKNOWN_TOOL
    assert not any(n.startswith("mcp__") for n in tool_names(provider, 6))
    assert read.ok and "the run goes on" in read.output
    assert result.stop_reason is StopReason.FINAL
    assert len(reported) == 1 and "'fault' is unavailable" in reported[0] and "Connection closed" in reported[0]
    assert env.mcp.connections["fault"].state is ServerState.FAILED
    assert slow.elapsed_ms < 29_000  # the 30 s sleep was cut by the timeout


async def test_invalid_schemas_and_unusable_names_are_skipped_not_offered(ws: Path) -> None:
    _, _, provider = await run_mcp(ws, [reply(text="nothing to do")], {"fault": fault_server()})
    mcp_names = [n for n in tool_names(provider, 0) if n.startswith("mcp__")]
    assert mcp_names == ["mcp__fault__crash", "mcp__fault__echo", "mcp__fault__fail", "mcp__fault__huge",
                         "mcp__fault__picture", "mcp__fault__slow"]


async def test_cancel_during_a_slow_mcp_call_stops_it_promptly(ws: Path) -> None:
    sink = RecordingSink()
    marker = ws.parent / "fault-calls.txt"
    env, _ = mcp_env(ws, [reply(call("mcp__fault__slow", seconds=60)), reply(text="never")],
                     {"fault": fault_server(marker)}, sink)
    assert env.mcp is not None
    session = AgentSession(env)
    generation = Generation(session)
    task = asyncio.ensure_future(generation.run("go"))
    # The call has reached the server (it records each call before serving it): the cancel lands mid-call.
    await wait_for(lambda: marker.exists() and "slow" in marker.read_text(encoding="utf-8").split(), timeout=60)
    started = time.monotonic()
    generation.cancel()
    result = await asyncio.wait_for(task, 50)
    await env.mcp.aclose()
    assert time.monotonic() - started < 30  # well before the 60 s call would have ended
    assert result.stop_reason is StopReason.CANCELLED
    (slow,) = results(session)
    assert slow.error_kind is ErrorKind.CANCELLED


async def test_a_server_that_cannot_start_is_reported_once_and_the_run_goes_on(ws: Path) -> None:
    reported: list[str] = []
    servers = {"ghost": {"command": str(ws / "no-such-program")}, "time": time_server()}
    replies = [reply(call("mcp__ghost__anything")), reply(text="done")]
    env, provider = mcp_env(ws, replies, servers)
    assert env.mcp is not None
    env.mcp.report = reported.append
    session = AgentSession(env)
    try:
        first = await Generation(session).run("one")
        second = await Generation(session).run("two")  # a second generation: not reported again
    finally:
        await env.mcp.aclose()
    assert first.stop_reason is StopReason.FINAL and second.stop_reason is StopReason.FINAL
    assert len(reported) == 1 and "MCP server 'ghost' is unavailable" in reported[0]
    assert results(session)[0].error_kind is ErrorKind.UNKNOWN_TOOL
    assert [n for n in tool_names(provider, 0) if n.startswith("mcp__")] == [
        "mcp__time__convert_time", "mcp__time__get_current_time"]


async def test_startup_timeout_boundary(ws: Path) -> None:
    reported: list[str] = []
    env, _ = mcp_env(ws, [reply(text="x")], {"slow": time_server(startupTimeoutMs=100)})
    assert env.mcp is not None
    env.mcp.report = reported.append
    try:
        await env.mcp.start()
    finally:
        await env.mcp.aclose()
    assert reported == ["MCP server 'slow' is unavailable (its tools are not offered): did not start within "
                        "100 ms (startupTimeoutMs)"]


async def test_mcp_tools_are_exclusive_unless_read_only_and_trusted(ws: Path) -> None:
    for trusted, expected in ((False, Access.EXEC), (True, Access.READ)):
        env, _ = mcp_env(ws, [], {"fault": fault_server(trusted=trusted)})
        assert env.mcp is not None
        try:
            await env.mcp.start()
            tools = {t.name: t for t in env.mcp.catalog()}
        finally:
            await env.mcp.aclose()
        assert tools["mcp__fault__echo"].access is expected  # annotated readOnlyHint
        assert tools["mcp__fault__echo"].needs_approval is (expected is Access.EXEC)
        assert tools["mcp__fault__slow"].access is Access.EXEC  # not annotated: exclusive either way
        assert tools["mcp__fault__slow"].needs_approval


async def test_two_untrusted_mcp_calls_in_one_step_run_one_after_the_other(ws: Path, tmp_path: Path) -> None:
    replies = [reply(call("mcp__fault__slow", seconds=1), call("mcp__fault__slow", seconds=1)), reply(text="ok")]
    _, session, _ = await run_mcp(ws, replies, {"fault": fault_server()})
    first, second = results(session)
    assert first.ok and second.ok
    # Exclusive lane: each waits for the other, so together they take at least the sum.
    assert first.elapsed_ms + second.elapsed_ms >= 2000
    assert max(first.elapsed_ms, second.elapsed_ms) >= 1900


async def test_git_server_reads_a_real_repository(ws: Path, tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"a.txt": "one\n"})
    (repo / "a.txt").write_text("two\n")
    replies = [reply(call("mcp__git__git_status", repo_path=str(repo))),
               reply(call("mcp__git__git_diff_unstaged", repo_path=str(repo))), reply(text="done")]
    result, session, _ = await run_mcp(ws, replies, {"git": git_server(repo)})
    status, diff = results(session)
    assert status.ok and "a.txt" in status.output
    assert diff.ok and "-one" in diff.output and "+two" in diff.output
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip() == "M a.txt"  # read-only: nothing changed
    assert result.stop_reason is StopReason.FINAL


async def test_streamable_http_server_by_url(ws: Path) -> None:
    """The `url` transport, against server-everything in its streamable HTTP mode on a free port."""
    stdio = everything_server()  # skips (outside CI) when the npm package is not installed
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = await asyncio.create_subprocess_exec(
        stdio["command"], stdio["args"][0], "streamableHttp", env={**os.environ, "PORT": str(port)},
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        assert proc.stderr is not None
        line = await asyncio.wait_for(proc.stderr.readline(), 60)
        while b"listening on port" not in line:
            line = await asyncio.wait_for(proc.stderr.readline(), 60)
        replies = [reply(call("mcp__web__echo", message="over http")), reply(text="done")]
        result, session, _ = await run_mcp(ws, replies, {"web": {"url": f"http://127.0.0.1:{port}/mcp"}})
        (echo,) = results(session)
        assert echo.ok and echo.output.endswith("\nEcho: over http")
        assert result.stop_reason is StopReason.FINAL
    finally:
        proc.terminate()
        await proc.wait()
