"""`session/list`, `session/fork` and the `_lsp_agent/checkpoints` / `_lsp_agent/rewind` extension of
`lsp-agent acp`, driven by the ACP SDK's client over stdio with the scripted model, in a real git repo."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block

from lsp_agent.providers.scripted import Script, ScriptedCall, ScriptedReply
from lsp_agent.settings.paths import workspace_dir
from tests.acp.client import RecordingClient, acp_agent, write_script
from tests.helpers import git_repo, wait_for

TIMEOUT = 90
#: a command that creates one file and deletes another: writes the agent did not make through its edit tools
MAKE_AND_DELETE = "python3 -c \"import os; open('made.txt', 'w').write('made\\n'); os.remove('gone.txt')\""
GATED = "python3 -c \"import os, time; [time.sleep(0.02) for _ in iter(lambda: os.path.exists('gate'), True)]\""


def _call(name: str, **arguments: Any) -> ScriptedCall:
    return ScriptedCall(name=name, arguments=arguments)


RUN_ONE = [
    ScriptedReply(tool_calls=[_call("apply_patch", path="a.txt", old_text="one\n", new_text="two\n")]),
    ScriptedReply(tool_calls=[_call("run_command", command=MAKE_AND_DELETE)]),
    ScriptedReply(text="first run done"),
]
RUN_TWO = [
    ScriptedReply(tool_calls=[_call("apply_patch", path="a.txt", old_text="two\n", new_text="three\n")]),
    ScriptedReply(tool_calls=[_call("write_file", path="new.txt", content="newer\n")]),
    ScriptedReply(text="second run done"),
]


def tree(root: Path) -> dict[str, str]:
    """Every file of the workspace (not .git) by its content's hash."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.relative_to(root).parts}


def _script(tmp_path: Path, *replies: ScriptedReply) -> Path:
    return write_script(tmp_path / "script.json", Script(label="acp history", replies=list(replies)))


def user_messages(client: RecordingClient, session_id: str) -> list[str]:
    """The ids the replay of `session/load` gave the user's messages, in order."""
    seen: list[str] = []
    for sid, update in client.updates:
        if sid == session_id and update.session_update == "user_message_chunk" and update.message_id not in seen:
            seen.append(update.message_id)
    return seen


async def rewind(conn: Any, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = await asyncio.wait_for(conn.ext_method("lsp_agent/rewind", params), TIMEOUT)
    return result


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "ws", {"a.txt": "one\n", "gone.txt": "bye\n", "keep.txt": "kept\n"})


async def test_rewind_to_each_user_message_restores_exactly_that_tree(tmp_path: Path, repo: Path) -> None:
    script = _script(tmp_path, *RUN_ONE, *RUN_TWO, ScriptedReply(text="in the fork"))
    client = RecordingClient()
    git_before = {p: (repo / ".git" / p).read_bytes() for p in ("HEAD", "index")}
    async with acp_agent(client, script, "approvalPolicy=never") as (conn, _):
        init = await conn.initialize(protocol_version=1)
        caps = init.agent_capabilities.session_capabilities
        assert caps is not None and caps.list is not None and caps.fork is not None
        session = (await conn.new_session(cwd=str(repo))).session_id
        before_one = tree(repo)
        first = await asyncio.wait_for(conn.prompt(session_id=session, prompt=[text_block("one")]), TIMEOUT)
        assert first.stop_reason == "end_turn"
        after_one = tree(repo)
        assert (repo / "made.txt").exists() and not (repo / "gone.txt").exists()
        second = await asyncio.wait_for(conn.prompt(session_id=session, prompt=[text_block("two")]), TIMEOUT)
        assert second.stop_reason == "end_turn"
        after_two = tree(repo)
        assert len({str(before_one), str(after_one), str(after_two)}) == 3

        await conn.load_session(cwd=str(repo), session_id=session)  # the replay names the messages
        prompt_one, prompt_two = user_messages(client, session)
        # the prompt's answer names its message too, so a client can rewind without a replay
        assert [first.field_meta["lspAgent"]["promptMessageId"],
                second.field_meta["lspAgent"]["promptMessageId"]] == [prompt_one, prompt_two]

        listed = await conn.ext_method("lsp_agent/checkpoints", {"sessionId": session})
        touched = {f for c in listed["checkpoints"] for f in c["files"]}
        assert {"a.txt", "made.txt", "gone.txt", "new.txt"} <= touched

        preview = await rewind(conn, sessionId=session, toMessageId=prompt_one, restore="code", dryRun=True)
        assert preview["status"] == "dry_run" and "-three\n+one\n" in preview["diff"]
        assert tree(repo) == after_two  # a dry run changes nothing

        done = await rewind(conn, sessionId=session, toMessageId=prompt_one, restore="code")
        assert done["status"] == "done" and tree(repo) == before_one
        done_two = await rewind(conn, sessionId=session, toMessageId=prompt_two, restore="code")
        assert done_two["status"] == "done" and tree(repo) == after_one
        undone = await rewind(conn, sessionId=session, toMessageId=done_two["undo"], restore="code")
        assert undone["status"] == "done" and tree(repo) == before_one  # a rewind is itself undone exactly
        both = await rewind(conn, sessionId=session, toMessageId=prompt_two, restore="both")
        assert both["status"] == "done" and tree(repo) == after_one and both["sessionID"] not in (None, session)
    assert {p: (repo / ".git" / p).read_bytes() for p in ("HEAD", "index")} == git_before


async def test_conversation_rewind_continues_in_the_fork_and_list_shows_it(tmp_path: Path, repo: Path) -> None:
    script = _script(tmp_path, *RUN_ONE, *RUN_TWO, ScriptedReply(text="answer in the fork"))
    client = RecordingClient()
    async with acp_agent(client, script, "approvalPolicy=never") as (conn, _):
        session = (await conn.new_session(cwd=str(repo))).session_id
        for text in ("one", "two"):
            await asyncio.wait_for(conn.prompt(session_id=session, prompt=[text_block(text)]), TIMEOUT)
        await conn.load_session(cwd=str(repo), session_id=session)
        _, prompt_two = user_messages(client, session)
        after_two = tree(repo)

        result = await rewind(conn, sessionId=session, toMessageId=prompt_two, restore="conversation")
        fork = result["sessionID"]
        assert fork not in (None, session) and tree(repo) == after_two  # the files untouched
        replayed = [u for sid, u in client.updates if sid == fork and u.session_update == "user_message_chunk"]
        assert [u.content.text for u in replayed] == ["one"]  # the fork's history, sent as for session/load

        answer = await asyncio.wait_for(conn.prompt(session_id=fork, prompt=[text_block("again")]), TIMEOUT)
        assert answer.stop_reason == "end_turn"
        # the scripted model answers by the number of model turns it is sent: the fork's two made it
        # give the reply after them, the second run's
        assert "second run done" in "".join(u.content.text for sid, u in client.updates
                                            if sid == fork and u.session_update == "agent_message_chunk")

        listed = await conn.list_sessions(cwd=str(repo))
        by_id = {s.session_id: s for s in listed.sessions}
        assert set(by_id) == {session, fork} and listed.next_cursor is None
        assert listed.sessions[0].session_id == fork  # the most recently updated first
        assert by_id[fork].field_meta["lspAgent"]["parentId"] == session
        assert by_id[fork].cwd == str(repo.resolve()) and by_id[fork].updated_at.endswith("Z")


async def test_session_fork_at_a_message_then_prompt_in_the_fork(tmp_path: Path, repo: Path) -> None:
    script = _script(tmp_path, *RUN_ONE, ScriptedReply(text="forked answer"), ScriptedReply(text="whole fork"))
    client = RecordingClient()
    async with acp_agent(client, script, "approvalPolicy=never") as (conn, _):
        session = (await conn.new_session(cwd=str(repo))).session_id
        await asyncio.wait_for(conn.prompt(session_id=session, prompt=[text_block("one")]), TIMEOUT)
        await conn.load_session(cwd=str(repo), session_id=session)
        (prompt_one,) = user_messages(client, session)

        at_start = await conn.fork_session(session_id=session, cwd=str(repo), lspAgent={"atMessageId": prompt_one})
        answer = await asyncio.wait_for(
            conn.prompt(session_id=at_start.session_id, prompt=[text_block("instead")]), TIMEOUT)
        assert answer.stop_reason == "end_turn"
        whole = await conn.fork_session(session_id=session, cwd=str(repo))
        assert len({session, at_start.session_id, whole.session_id}) == 3
        await asyncio.wait_for(conn.prompt(session_id=whole.session_id, prompt=[text_block("more")]), TIMEOUT)

        client.updates.clear()
        await conn.load_session(cwd=str(repo), session_id=at_start.session_id)
        assert [u.content.text for _, u in client.updates if u.session_update == "user_message_chunk"] == ["instead"]
        client.updates.clear()
        await conn.load_session(cwd=str(repo), session_id=whole.session_id)
        assert [u.content.text for _, u in client.updates
                if u.session_update == "user_message_chunk"] == ["one", "more"]

        with pytest.raises(RequestError) as caught:
            await conn.fork_session(session_id=session, cwd=str(repo), lspAgent={"atMessageId": "msg_nope"})
        assert (caught.value.code, caught.value.data["kind"]) == (-32004, "unknown_message")
        with pytest.raises(RequestError) as caught:
            await conn.fork_session(session_id="ses_nope", cwd=str(repo))
        assert (caught.value.code, caught.value.data["kind"]) == (-32004, "unknown_session")


async def test_session_list_pages_with_a_cursor(tmp_path: Path, repo: Path) -> None:
    client = RecordingClient()
    async with acp_agent(client, _script(tmp_path, ScriptedReply(text="x"))) as (conn, _):
        made = {(await conn.new_session(cwd=str(repo))).session_id for _ in range(57)}
        seen: list[str] = []
        cursor = None
        while True:
            page = await conn.list_sessions(cwd=str(repo), cursor=cursor)
            seen += [s.session_id for s in page.sessions]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert len(seen) == len(made) and set(seen) == made  # every session once, across pages
        everywhere = await conn.list_sessions()  # no cwd: the workspaces this connection opened
        assert {s.session_id for s in everywhere.sessions} <= made and everywhere.next_cursor is not None
        with pytest.raises(RequestError) as caught:
            await conn.list_sessions(cwd=str(repo), cursor="not a cursor")
        assert (caught.value.code, caught.value.data["kind"]) == (-32602, "invalid_params")
        # the SDK's other unstable methods, not implemented here, stay unknown
        with pytest.raises(RequestError) as caught:
            await conn.resume_session(session_id=sorted(made)[0], cwd=str(repo))
        assert caught.value.code == -32601
    # A client that lists before opening anything (acpx `sessions list`) started the agent in its project.
    async with acp_agent(RecordingClient(), _script(tmp_path, ScriptedReply(text="x")), cwd=repo) as (conn, _):
        first = await conn.list_sessions()
        assert len(first.sessions) == 50 and {s.session_id for s in first.sessions} <= made


async def test_rewind_refusals_are_classified(tmp_path: Path, repo: Path) -> None:
    script = _script(tmp_path, *RUN_ONE, ScriptedReply(tool_calls=[_call("run_command", command=GATED)]),
                     ScriptedReply(text="released"))
    client = RecordingClient()
    async with acp_agent(client, script, "approvalPolicy=never") as (conn, _):
        session = (await conn.new_session(cwd=str(repo))).session_id
        await asyncio.wait_for(conn.prompt(session_id=session, prompt=[text_block("one")]), TIMEOUT)
        after_one = tree(repo)
        cases = [({"sessionId": "ses_nope", "toMessageId": "msg_x", "restore": "code"}, -32004, "unknown_session"),
                 ({"sessionId": session, "toMessageId": "msg_nope", "restore": "code"}, -32004, "unknown_message"),
                 ({"sessionId": session, "toMessageId": "msg_nope", "restore": "both"}, -32004, "unknown_message"),
                 ({"sessionId": session, "toMessageId": "ckpt-999", "restore": "code"}, -32004, "unknown_message"),
                 ({"sessionId": session, "toMessageId": "msg_x", "restore": "sideways"}, -32602, "invalid_params")]
        for params, code, kind in cases:
            with pytest.raises(RequestError) as caught:
                await rewind(conn, **params)
            assert (caught.value.code, caught.value.data["kind"]) == (code, kind), params
        await conn.load_session(cwd=str(repo), session_id=session)
        first_prompt = user_messages(client, session)[0]
        running = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("wait")]))
        await wait_for(lambda: any(u.session_update == "tool_call" and "gate" in str(u.raw_input)
                                   for _, u in client.updates), timeout=TIMEOUT)
        with pytest.raises(RequestError) as caught:
            await rewind(conn, sessionId=session, toMessageId=first_prompt, restore="code")
        assert (caught.value.code, caught.value.data["kind"]) == (-32009, "busy")
        (repo / "gate").write_text("go")
        await asyncio.wait_for(running, TIMEOUT)
        (repo / "gate").unlink()
        assert tree(repo) == after_one  # nothing was restored by a refused rewind

        # the checkpoints' contents gone (a disk cleaned by hand): each such file is reported, left as it is
        shutil.rmtree(workspace_dir(repo) / "checkpoints" / "objects")
        broken = await rewind(conn, sessionId=session, toMessageId=first_prompt, restore="code")
        assert sorted(broken["failed"]) == ["a.txt", "gone.txt"]
        assert all("missing or damaged" in why for why in broken["failed"].values())
        assert (repo / "a.txt").read_text() == "two\n" and not (repo / "gone.txt").exists()


async def test_a_step_folded_by_retention_is_refused_as_folded(tmp_path: Path, repo: Path) -> None:
    client = RecordingClient()
    async with acp_agent(client, _script(tmp_path, *RUN_ONE), "approvalPolicy=never",
                         "checkpoints.per_session=1") as (conn, _):
        session = (await conn.new_session(cwd=str(repo))).session_id
        answer = await asyncio.wait_for(conn.prompt(session_id=session, prompt=[text_block("one")]), TIMEOUT)
        after_one = tree(repo)
        with pytest.raises(RequestError) as caught:
            await rewind(conn, sessionId=session, toMessageId=answer.field_meta["lspAgent"]["promptMessageId"],
                         restore="code")
        assert (caught.value.code, caught.value.data["kind"]) == (-32004, "checkpoint_folded")
        assert tree(repo) == after_one
