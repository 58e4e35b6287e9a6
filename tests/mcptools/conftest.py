"""MCP test setup: real servers over stdio (the reference servers from the registries, and the
tiny fault server here), the real loop, and a scripted model that records each request."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.app.runtime import open_environment
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession, Environment
from lsp_agent.domain.events import RunFinish
from lsp_agent.providers.scripted import Script, ScriptedProvider, ScriptedReply
from lsp_agent.settings.config import load_settings
from tests.helpers import RecordingSink

HERE = Path(__file__).parent
FAULT_SERVER = HERE / "fault_server.py"
PY = sys.executable
#: Servers start slowly on a loaded CI machine (importing the SDK alone can take seconds).
SLOW_START = 60_000


def time_server(**extra: Any) -> dict[str, Any]:
    return {"command": PY, "args": ["-m", "mcp_server_time"], "startupTimeoutMs": SLOW_START, **extra}


def fault_server(marker: Path | None = None, **extra: Any) -> dict[str, Any]:
    args = [str(FAULT_SERVER), *(["--marker", str(marker)] if marker else [])]
    return {"command": PY, "args": args, "startupTimeoutMs": SLOW_START, **extra}


def git_server(repo: Path, **extra: Any) -> dict[str, Any]:
    return {"command": PY, "args": ["-m", "mcp_server_git", "--repository", str(repo)],
            "startupTimeoutMs": SLOW_START, **extra}


def everything_server() -> dict[str, Any]:
    """@modelcontextprotocol/server-everything from npm, installed by .ci/run (tests/mcptools/install_everything.sh)."""
    default = HERE.parent.parent / ".ci-cache" / "mcp-everything" / "node_modules" / ".bin" / "mcp-server-everything"
    binary = Path(os.environ.get("LSP_AGENT_MCP_EVERYTHING", default))
    node = shutil.which("node")
    if not binary.exists() or node is None:
        reason = (f"@modelcontextprotocol/server-everything is not installed at {binary} (or node is missing); "
                  "run tests/mcptools/install_everything.sh")
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return {"command": node, "args": [str(binary), "stdio"], "startupTimeoutMs": SLOW_START}


def mcp_env(root: Path, replies: list[ScriptedReply], servers: dict[str, Any], sink: RecordingSink | None = None,
            **overrides: Any) -> tuple[Environment, ScriptedProvider]:
    # These suites exercise MCP itself; the approval of MCP calls has its own tests (test_mcp_approval.py).
    settings = load_settings(root, {"mcp": {"servers": servers}, "approvalPolicy": "never", **overrides})
    provider = ScriptedProvider(Script(label="test", replies=replies), record_requests=True)
    return open_environment(root, settings, provider, sink or RecordingSink()), provider


async def run_mcp(root: Path, replies: list[ScriptedReply], servers: dict[str, Any],
                  sink: RecordingSink | None = None, **overrides: Any
                  ) -> tuple[RunFinish, AgentSession, ScriptedProvider]:
    env, provider = mcp_env(root, replies, servers, sink, **overrides)
    session = AgentSession(env)
    try:
        result = await Generation(session).run("use the tools")
    finally:
        if env.mcp is not None:
            await env.mcp.aclose()
    return result, session, provider


def tool_names(provider: ScriptedProvider, index: int) -> list[str]:
    return [t.name for t in provider.requests[index].tools]


def results(session: AgentSession) -> list[Any]:
    return [p for m in session.history for p in m.tool_results()]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root
