"""A hostile repository opened over ACP (the real `lsp-agent acp`, driven by the SDK's client side): at
session/new the agent asks through session/request_permission, listing what the gated config would do;
"Not now" (or no answer) leaves it ignored — nothing starts, no key goes anywhere — and "Trust and apply"
stores the trust and applies it before the first prompt runs."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities

from lsp_agent.settings.config import inspect_workspace
from tests.acp.client import RecordingClient
from tests.providers.loopback import Reply, turn
from tests.security.hostile_repo import MODEL, HostileRepo, close, make_hostile_repo

TIMEOUT = 120


@pytest.fixture
async def repo(tmp_path: Path, isolated_state: Path) -> AsyncIterator[HostileRepo]:
    made = await make_hostile_repo(tmp_path)
    yield made
    await close(made)


async def _session_and_prompt(repo: HostileRepo, client: RecordingClient) -> str:
    repo.user.queue(Reply(chunks=[turn("chat", text="Done.")], chunk_delay=0))
    args = ["-m", "lsp_agent", "acp", "--model", MODEL]
    async with spawn_agent_process(client, sys.executable, *args, env={**os.environ, **repo.env()}) as (conn, _):
        caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=False, write_text_file=False))
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps),
                               TIMEOUT)
        session = await asyncio.wait_for(conn.new_session(cwd=str(repo.workspace), mcp_servers=[]), TIMEOUT)
        await asyncio.wait_for(client.permission_asked.wait(), TIMEOUT)
        prompt = asyncio.ensure_future(asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[text_block("look around")]), TIMEOUT))
        if client.hold_permission is not None:
            # The user answers only after the prompt was sent: the prompt must wait for the answer.
            for _ in range(5):
                await asyncio.sleep(0)  # yields only: lets the prompt request be written first
            client.hold_permission.set()
        return (await prompt).stop_reason


async def test_a_hostile_repository_over_acp_is_asked_about_and_ignored_unless_trusted(repo: HostileRepo) -> None:
    client = RecordingClient(answer="not_now")
    assert await _session_and_prompt(repo, client) == "end_turn"
    [(call, options)] = client.permissions
    assert options == ["trust", "not_now"]
    shown = "".join(block.content.text for block in call.content)
    assert "mcp.servers.evil" in shown and "outside the sandbox" in shown and repo.attacker.url in shown
    repo.assert_nothing_started_and_no_key_sent()
    assert inspect_workspace(repo.workspace).state == "untrusted"

    client = RecordingClient(answer=None)  # the client cancels the question: not trusted either
    assert await _session_and_prompt(repo, client) == "end_turn"
    repo.assert_nothing_started_and_no_key_sent()

    client = RecordingClient(answer="trust", hold_permission=asyncio.Event())
    assert await _session_and_prompt(repo, client) == "end_turn"
    assert inspect_workspace(repo.workspace).state == "trusted"  # stored like `lsp-agent trust`
    repo.assert_applied()


async def test_a_config_changed_during_an_acp_connection_is_ignored_until_trusted_again(repo: HostileRepo) -> None:
    """One connection: trusted, then the file changes (asked again, "Not now"), then it becomes unusable:
    each later prompt runs without the gated settings — never with the ones trusted before."""
    client = RecordingClient(answer="trust")
    args = ["-m", "lsp_agent", "acp", "--model", MODEL]
    async with spawn_agent_process(client, sys.executable, *args, env={**os.environ, **repo.env()}) as (conn, _):
        caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=False, write_text_file=False))
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps),
                               TIMEOUT)
        session = await asyncio.wait_for(conn.new_session(cwd=str(repo.workspace), mcp_servers=[]), TIMEOUT)

        async def prompt() -> None:
            repo.user.queue(Reply(chunks=[turn("chat", text="Done.")], chunk_delay=0))
            result = await asyncio.wait_for(
                conn.prompt(session_id=session.session_id, prompt=[text_block("look around")]), TIMEOUT)
            assert result.stop_reason == "end_turn"

        await asyncio.wait_for(client.permission_asked.wait(), TIMEOUT)
        await prompt()
        repo.assert_applied()

        client.answer = "not_now"
        repo.canary.unlink()
        trusted_text = repo.config.read_text()
        repo.config.write_text("this is [ not toml\n", encoding="utf-8")
        await prompt()
        repo.assert_nothing_started_and_no_key_sent()

        repo.config.write_text(trusted_text + "\n# changed\n", encoding="utf-8")
        await prompt()
        assert len(client.permissions) == 2  # asked again about the new content
        repo.assert_nothing_started_and_no_key_sent()
