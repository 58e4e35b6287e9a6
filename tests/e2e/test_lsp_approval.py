"""agent/requestApproval over stdio: the real server asks the editor before a command under
approvalPolicy "untrusted"; allow runs it, deny / an error / no answer (timeout) runs nothing, and a
cancel while the editor is asked cancels the call."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcInternalError

from lsp_agent.protocol.approval_models import AGENT_REQUEST_APPROVAL
from tests.e2e.conftest import TIMEOUT, Editor, StartEditor
from tests.helpers import call, reply, wait_for

TOUCH = "python3 -c \"open('made.txt', 'w').write('x')\""


#: set at the end of a test whose editor "never answers", so no handler task outlives the client
RELEASE: list[asyncio.Event] = []
#: one entry per handler that has returned its (late) answer
ANSWERED: list[str] = []


def answering(editor: Editor, answer: str | Exception | None) -> list[dict[str, Any]]:
    """The editor's approval handler: a decision, an error, or (None) no answer until released."""
    asked: list[dict[str, Any]] = []
    release = asyncio.Event()
    if answer is None:
        RELEASE.append(release)

    @editor.client.feature(AGENT_REQUEST_APPROVAL)  # type: ignore[untyped-decorator]
    async def on_request(ls: Any, params: Any) -> dict[str, Any]:
        asked.append(params)
        if isinstance(answer, Exception):
            raise answer
        if answer is None:
            await release.wait()
            ANSWERED.append(params["callID"])
            return {"decision": "allow_once"}  # too late: the server no longer waits
        return {"decision": answer}

    return asked


async def _start(start_editor: StartEditor, workspace: Path, timeout_s: float = 30) -> Editor:
    return await start_editor(workspace, [reply(call("run_command", command=TOUCH)), reply(text="done")],
                              init_options={"approvalPolicy": "untrusted", "approvalTimeoutS": timeout_s})


def _tool_state(editor: Editor, generation: str) -> dict[str, Any]:
    (use,) = [e["event"] for e in editor.events if e["generation"] == generation and e["event"]["type"] == "tool_use"]
    state: dict[str, Any] = use["part"]["state"]
    return state


def _approval_notices(editor: Editor, generation: str) -> list[dict[str, Any]]:
    return [e["event"] for e in editor.events if e["generation"] == generation
            and e["event"]["type"] == "notice" and e["event"]["kind"] == "approval"]


async def test_allow_runs_the_command_and_the_decision_is_recorded(workspace: Path,
                                                                   start_editor: StartEditor) -> None:
    editor = await _start(start_editor, workspace)
    asked = answering(editor, "allow_once")
    started = await editor.run("make the file")
    finish = await editor.finished(started["generation"])
    assert finish["stopReason"] == "final"
    (params,) = asked
    assert params["sessionID"] == started["sessionID"] and params["generation"] == started["generation"]
    assert (params["tool"], params["kind"], params["reason"]) == ("run_command", "command", "untrusted")
    assert params["what"].startswith("python3 -c") and params["callID"]
    assert params["options"] == ["allow_once", "allow_session", "deny"] and "untrusted" in params["why"]
    state = _tool_state(editor, started["generation"])
    assert state["output"].startswith("OK: exit=0") and (workspace / "made.txt").exists()
    record = state["metadata"]["approvals"][0]
    assert (record["decision"], record["who"]) == ("allow_once", "user (editor)") and record["at"]
    (notice,) = _approval_notices(editor, started["generation"])
    assert notice["data"]["decision"] == "allow_once" and notice["data"]["callID"] == params["callID"]


async def test_allow_session_says_its_scope_and_grants_exactly_that_command(workspace: Path,
                                                                           start_editor: StartEditor) -> None:
    other = "python3 -c \"open('other.txt', 'w').write('x')\""
    editor = await start_editor(workspace, [reply(call("run_command", command=TOUCH)),
                                            reply(call("run_command", command=TOUCH)),
                                            reply(call("run_command", command=other)), reply(text="done")],
                                init_options={"approvalPolicy": "untrusted", "approvalTimeoutS": 30})
    answers = iter(["allow_session", "deny"])
    asked: list[dict[str, Any]] = []

    @editor.client.feature(AGENT_REQUEST_APPROVAL)  # type: ignore[untyped-decorator]
    async def on_request(ls: Any, params: Any) -> dict[str, Any]:
        asked.append(params)
        return {"decision": next(answers)}

    started = await editor.run("make the files")
    assert (await editor.finished(started["generation"]))["stopReason"] == "final"
    # the same argv rode on the grant; another python3 line was asked again and denied
    assert [p["what"] for p in asked] == [shlex.join(shlex.split(TOUCH)), shlex.join(shlex.split(other))]
    assert asked[0]["sessionScope"] == f"exactly `{shlex.join(shlex.split(TOUCH))}` in run_command"
    assert (workspace / "made.txt").exists() and not (workspace / "other.txt").exists()
    whos = [n["data"]["who"] for n in _approval_notices(editor, started["generation"])]
    assert whos == ["user (editor)", "session", "user (editor)"]
    assert _approval_notices(editor, started["generation"])[1]["data"]["scope"] == asked[0]["sessionScope"]


async def test_deny_runs_nothing(workspace: Path, start_editor: StartEditor) -> None:
    editor = await _start(start_editor, workspace)
    answering(editor, "deny")
    started = await editor.run("make the file")
    assert (await editor.finished(started["generation"]))["stopReason"] == "final"
    state = _tool_state(editor, started["generation"])
    assert state["errorKind"] == "denied" and "by user (editor)" in state["output"]
    assert not (workspace / "made.txt").exists()
    assert "tool_start" not in editor.event_types(started["generation"])


async def test_no_answer_before_the_timeout_is_a_deny(workspace: Path, start_editor: StartEditor) -> None:
    editor = await _start(start_editor, workspace, timeout_s=1)
    asked = answering(editor, None)
    started = await editor.run("make the file")
    assert (await editor.finished(started["generation"]))["stopReason"] == "final"
    assert len(asked) == 1
    state = _tool_state(editor, started["generation"])
    assert state["errorKind"] == "denied" and "by timeout" in state["output"]
    assert not (workspace / "made.txt").exists()
    await _release()


async def _release() -> None:
    """Let the held handlers answer, late, and wait until each has returned its answer."""
    held = len(RELEASE)
    for event in RELEASE:
        event.set()
    RELEASE.clear()
    await wait_for(lambda: len(ANSWERED) == held, timeout=TIMEOUT)
    ANSWERED.clear()


async def test_a_late_answer_after_the_timeout_is_ignored(workspace: Path, start_editor: StartEditor) -> None:
    editor = await _start(start_editor, workspace, timeout_s=1)
    answering(editor, None)
    started = await editor.run("make the file")
    assert (await editor.finished(started["generation"]))["stopReason"] == "final"
    await _release()
    # The late answer was written before this request: its reply shows the server read past it.
    status = await editor.request("agent/status", {"sessionID": started["sessionID"]})
    assert status["state"] == "idle"


async def test_a_client_error_is_a_deny(workspace: Path, start_editor: StartEditor) -> None:
    editor = await _start(start_editor, workspace)
    answering(editor, JsonRpcInternalError("the dialog crashed"))
    started = await editor.run("make the file")
    await editor.finished(started["generation"])
    state = _tool_state(editor, started["generation"])
    assert state["errorKind"] == "denied" and "editor error" in state["output"]
    assert not (workspace / "made.txt").exists()


async def test_a_malformed_answer_is_a_deny(workspace: Path, start_editor: StartEditor) -> None:
    editor = await _start(start_editor, workspace)
    answering(editor, "yes please")
    started = await editor.run("make the file")
    await editor.finished(started["generation"])
    assert "malformed answer" in _tool_state(editor, started["generation"])["output"]
    assert not (workspace / "made.txt").exists()


async def test_cancelling_while_the_editor_asks_cancels_the_call(workspace: Path,
                                                                 start_editor: StartEditor) -> None:
    editor = await _start(start_editor, workspace)
    asked = answering(editor, None)
    started = await editor.run("make the file")
    await wait_for(lambda: bool(asked), timeout=TIMEOUT)  # the editor is asked
    await editor.request("agent/cancel", {"sessionID": started["sessionID"]})
    finish = await editor.finished(started["generation"])
    assert finish["stopReason"] == "cancelled"
    assert _tool_state(editor, started["generation"])["errorKind"] == "cancelled"
    assert not (workspace / "made.txt").exists()
    await _release()
