"""MCP calls under the approval policy, with a real MCP server (tests/mcptools/fault_server.py):
a tool that is not read-only by a trusted server is put to the user first; a read-only tool of a
trusted server is not; `never` asks nothing."""

from __future__ import annotations

from pathlib import Path

from lsp_agent.core.approval import Decision
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from tests.helpers import call, reply
from tests.mcptools.conftest import fault_server, mcp_env
from tests.unit.test_approval import Desk


async def _run(root: Path, trusted: bool, desk: Desk, policy: str) -> list[tuple[bool, str]]:
    root.mkdir(exist_ok=True)
    replies = [reply(call("mcp__fault__echo", text="hello")), reply(text="done")]
    env, _ = mcp_env(root, replies, {"fault": fault_server(trusted=trusted)}, approvalPolicy=policy)
    env.approver = desk
    session = AgentSession(env)
    try:
        await Generation(session).run("use the tools")
    finally:
        if env.mcp is not None:
            await env.mcp.aclose()
    return [(p.ok, p.output) for m in session.history for p in m.tool_results()]


async def test_an_untrusted_servers_tool_is_asked_first_and_deny_runs_nothing(tmp_path: Path) -> None:
    desk = Desk(Decision.DENY)
    ((ok, output),) = await _run(tmp_path, False, desk, "on-request")
    (asked,) = desk.asked
    assert (asked.tool, asked.kind, asked.reason.value) == ("mcp__fault__echo", "mcp", "mcp")
    assert asked.what == 'mcp__fault__echo {"text": "hello"}'
    assert not ok and output.startswith("ERROR: refused:") and "decision deny by user" in output


async def test_allow_runs_it(tmp_path: Path) -> None:
    desk = Desk(Decision.ALLOW_ONCE)
    ((ok, output),) = await _run(tmp_path, False, desk, "on-request")
    assert ok and output.endswith("\nhello") and len(desk.asked) == 1


async def test_a_read_only_tool_of_a_trusted_server_and_never_ask_nothing(tmp_path: Path) -> None:
    desk = Desk()
    ((ok, _),) = await _run(tmp_path / "a", True, desk, "on-request")
    ((ok_never, _),) = await _run(tmp_path / "b", False, desk, "never")
    assert ok and ok_never and desk.asked == []
