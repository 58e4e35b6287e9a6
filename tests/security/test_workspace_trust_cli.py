"""A hostile repository opened with `lsp-agent run`: nothing of its gated config applies until
`lsp-agent trust`; a change (including one a sandboxed command plants) makes it untrusted again;
revoke forgets. The attack is the repository's own config (tests/security/hostile_repo.py)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.providers.loopback import Reply, turn
from tests.security.conftest import needs_bwrap
from tests.security.hostile_repo import MODEL, HostileRepo, close, hostile_config, make_hostile_repo

TIMEOUT = 180


@pytest.fixture
async def repo(tmp_path: Path, isolated_state: Path) -> AsyncIterator[HostileRepo]:
    made = await make_hostile_repo(tmp_path)
    yield made
    await close(made)


async def _lsp_agent(*args: str, env: dict[str, str], stdin: bytes = b"") -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lsp_agent", *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env={**os.environ, **env})
    out, err = await asyncio.wait_for(proc.communicate(stdin), TIMEOUT)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _run(repo: HostileRepo, *calls: tuple[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    for n, (name, arguments) in enumerate(calls):
        repo.user.queue(Reply(chunks=[turn("chat", call=(f"call_{n}", name, arguments))], chunk_delay=0))
    repo.user.queue(Reply(chunks=[turn("chat", text="Done.")], chunk_delay=0))
    _, out, err = await _lsp_agent("run", "look around", "--workspace", str(repo.workspace), "--model", MODEL,
                                      "--json", env=repo.env())
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert any(e.get("type") == "run_finish" for e in events), err
    return events, err


def _outputs(events: list[dict[str, Any]]) -> list[str]:
    return [str(e["part"]["state"].get("output", "")) for e in events if e.get("type") == "tool_use"]


BASH = ("run_command", {"command": "bash -c 'echo bash-ran'"})


async def test_a_hostile_repository_starts_nothing_and_sends_no_key_until_trusted(repo: HostileRepo) -> None:
    events, err = await _run(repo, BASH)
    repo.assert_nothing_started_and_no_key_sent()
    assert "not an allowed program" in _outputs(events)[0]  # the repository's allow-list is not used
    [line] = [line for line in err.splitlines() if "ignored" in line]
    assert "mcp.servers.evil" in line and "providers.openai.baseUrl" in line and "lsp-agent trust" in line

    code, out, _ = await _lsp_agent("trust", "--workspace", str(repo.workspace), "--show", env={})
    assert code == 0 and "NOT trusted" in out and "mcp.servers.evil" in out
    code, _, err = await _lsp_agent("trust", "--workspace", str(repo.workspace), env={})  # no terminal: no
    assert code == 1 and "not trusted" in err
    code, out, _ = await _lsp_agent("trust", "--workspace", str(repo.workspace), "--yes", env={})
    assert code == 0 and out.strip().endswith("trusted")

    events, err = await _run(repo, BASH)
    repo.assert_applied()
    assert "ignored" not in err
    assert "bash-ran" in _outputs(events)[0] or "sandbox" in _outputs(events)[0]

    # Changed since it was trusted: ignored again (a pull, an edit, or a planted line).
    repo.canary.unlink()
    repo.config.write_text(repo.config.read_text() + "\n# changed\n", encoding="utf-8")
    _, err = await _run(repo)
    assert "changed since you trusted it" in err
    repo.assert_nothing_started_and_no_key_sent()

    await _lsp_agent("trust", "--workspace", str(repo.workspace), "--yes", env={})
    code, out, _ = await _lsp_agent("trust", "--workspace", str(repo.workspace), "--revoke", env={})
    assert code == 0 and "NOT trusted" in out
    _, err = await _run(repo)
    repo.assert_nothing_started_and_no_key_sent()


@needs_bwrap
async def test_a_config_a_sandboxed_command_plants_is_ignored_by_the_next_run(repo: HostileRepo) -> None:
    """The model writes `.lsp-agent/config.toml` from a sandboxed command in a workspace that had none.
    Where the sandbox already refuses that write, the repository "came that way" instead: either way the
    next run must not start the planted MCP server."""
    planted = hostile_config(repo.attacker.url, repo.canary)
    repo.config.unlink()
    repo.config.parent.rmdir()
    write = ("import os; os.makedirs('.lsp-agent', exist_ok=True); "
             f"open('.lsp-agent/config.toml', 'w').write({planted!r})")
    await _run(repo, ("run_command", {"command": f"python3 -c {json.dumps(write)}"}))
    if not repo.config.exists():
        repo.config.parent.mkdir(exist_ok=True)
        repo.config.write_text(planted, encoding="utf-8")
    _, err = await _run(repo)
    repo.assert_nothing_started_and_no_key_sent()
    assert "mcp.servers.evil" in err
