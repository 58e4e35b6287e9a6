"""The approval policy in the core: what is asked, when, what a decision does, and its record.

The Approver here is a test implementation of the port (the CLI, the server and the editors have
their own, tested in tests/unit/test_cli_approval.py and tests/e2e/test_lsp_approval.py). Commands
are real processes; "no sandbox" is a real missing bwrap (LSP_AGENT_BWRAP pointed elsewhere).
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_agent.core.approval import Answer, ApprovalRequest, Decision
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from lsp_agent.sandbox import probe
from tests.helpers import RecordingSink, call, make_env, reply, wait_for

BWRAP = probe().available


class Desk:
    """Answers from a list; `hold` makes it never answer (a user who walked away)."""

    def __init__(self, *answers: Decision, hold: bool = False, fail: bool = False) -> None:
        self.answers = list(answers)
        self.hold = hold
        self.fail = fail
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        if self.fail:
            raise ConnectionError("client went away")
        if self.hold:
            await asyncio.Event().wait()
        return Answer(self.answers.pop(0), "user")


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("LSP_AGENT_BWRAP", "/nonexistent/bwrap")
    probe.cache_clear()
    yield
    monkeypatch.undo()
    probe.cache_clear()


def _touch(name: str) -> str:
    return f"python3 -c \"open('{name}', 'w').write('x')\""


def _shown(name: str) -> str:
    return shlex.join(shlex.split(_touch(name)))


async def _run(root: Path, replies: list[object], desk: Desk, sink: RecordingSink | None = None,
               **settings: object) -> tuple[object, AgentSession]:
    env = make_env(root, replies, sink, **settings)  # type: ignore[arg-type]
    env.approver = desk
    session = AgentSession(env)
    return await Generation(session).run("go"), session


def _results(session: AgentSession) -> list[object]:
    return [p for m in session.history for p in m.tool_results()]


async def test_untrusted_asks_before_every_command_and_deny_runs_nothing(tmp_path: Path) -> None:
    desk = Desk(Decision.DENY)
    sink = RecordingSink()
    _, session = await _run(tmp_path, [reply(call("run_command", command=_touch("made"))), reply(text="ok")],
                            desk, sink, approvalPolicy="untrusted")
    assert not (tmp_path / "made").exists()
    (result,) = _results(session)
    assert result.error_kind.value == "denied" and result.output.startswith("ERROR: refused:")  # type: ignore[attr-defined]
    assert "python3 -c" in result.output and "by user" in result.output  # type: ignore[attr-defined]
    request = desk.asked[0]
    assert (request.tool, request.reason.value, request.session_id) == ("run_command", "untrusted", session.id)
    assert request.what.startswith("python3 -c") and request.call_id
    record = result.metadata["approvals"][0]  # type: ignore[attr-defined]
    assert (record["decision"], record["who"], record["tool"]) == ("deny", "user", "run_command")
    assert record["at"].endswith("Z") and "at" not in result.output  # type: ignore[attr-defined]
    stored = session.env.store.events(session.id, "approval")
    assert [e["decision"] for e in stored] == ["deny"] and stored[0]["at"] == record["at"]
    notices = [e for e in sink.of("notice") if e.kind == "approval"]
    assert len(notices) == 1 and notices[0].data["decision"] == "deny"
    assert "tool_start" not in [t for t in sink.types() if t == "tool_start"]  # nothing started


async def test_allow_session_grants_exactly_the_command_shown_and_survives_resume(tmp_path: Path) -> None:
    desk = Desk(Decision.ALLOW_SESSION, Decision.ALLOW_ONCE, Decision.DENY)
    replies = [reply(call("run_command", command=_touch("a"))), reply(call("run_command", command=_touch("a"))),
               reply(call("run_command", command=_touch("b"))), reply(call("run_command", command="ls")),
               reply(text="done")]
    _, session = await _run(tmp_path, replies, desk, approvalPolicy="untrusted")
    assert (tmp_path / "a").exists() and (tmp_path / "b").exists()
    # the same argv is granted; another python3 line is asked again
    assert [r.what for r in desk.asked] == [_shown("a"), _shown("b"), "ls"]
    assert desk.asked[0].session_scope == f"exactly `{_shown('a')}` in run_command"
    records = [r.metadata["approvals"][0] for r in _results(session)]  # type: ignore[attr-defined]
    assert [r["who"] for r in records] == ["user", "session", "user", "user"]
    assert records[1]["scope"] == f"exactly `{_shown('a')}` in run_command"
    # A resumed session keeps its exact allow_session grants; a new session does not.
    # (the scripted model answers by position in the session: the first five replies were used)
    env = make_env(tmp_path, [*replies, reply(call("run_command", command=_touch("a"))),
                              reply(call("run_command", command=_touch("c"))), reply(text="done")],
                   approvalPolicy="untrusted")
    again_desk = Desk(Decision.DENY)
    env.approver = again_desk
    again = AgentSession(env, session.id)
    await Generation(again).run("more")
    assert [r.what for r in again_desk.asked] == [_shown("c")] and not (tmp_path / "c").exists()


async def test_no_answer_before_the_timeout_is_a_deny(tmp_path: Path) -> None:
    desk = Desk(hold=True)
    _, session = await _run(tmp_path, [reply(call("run_command", command=_touch("late"))), reply(text="ok")],
                            desk, approvalPolicy="untrusted", approvalTimeoutS=0.3)
    (result,) = _results(session)
    assert result.error_kind.value == "denied" and "by timeout" in result.output  # type: ignore[attr-defined]
    assert not (tmp_path / "late").exists()


async def test_an_approver_error_is_a_deny(tmp_path: Path) -> None:
    desk = Desk(fail=True)
    _, session = await _run(tmp_path, [reply(call("run_command", command=_touch("x"))), reply(text="ok")],
                            desk, approvalPolicy="untrusted")
    (result,) = _results(session)
    assert result.error_kind.value == "denied" and "ConnectionError" in result.output  # type: ignore[attr-defined]
    assert not (tmp_path / "x").exists()


async def test_cancelling_while_waiting_cancels_the_call(tmp_path: Path) -> None:
    desk = Desk(hold=True)
    env = make_env(tmp_path, [reply(call("run_command", command=_touch("never"))), reply(text="no")],
                   approvalPolicy="untrusted")
    env.approver = desk
    generation = Generation(AgentSession(env))
    task = asyncio.ensure_future(generation.run("go"))
    await wait_for(lambda: bool(desk.asked), 30)
    generation.cancel()
    result = await asyncio.wait_for(task, 30)
    assert result.stop_reason.value == "cancelled"
    (part,) = _results(generation.session)
    assert part.error_kind.value == "cancelled" and not (tmp_path / "never").exists()  # type: ignore[attr-defined]
    assert env.store.events(generation.session.id, "approval")[0]["who"] == "cancelled"


async def test_on_request_asks_nothing_for_sandboxed_commands_and_file_tools(tmp_path: Path) -> None:
    if not BWRAP:
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    desk = Desk()
    replies = [reply(call("run_command", command="ls"), call("write_file", path="n.txt", content="x\n")),
               reply(text="ok")]
    _, session = await _run(tmp_path, replies, desk)
    assert desk.asked == [] and all(r.ok for r in _results(session))  # type: ignore[attr-defined]


@pytest.mark.usefixtures("no_bwrap")
async def test_without_a_sandbox_allow_runs_it_unsandboxed_and_deny_refuses(tmp_path: Path) -> None:
    desk = Desk(Decision.ALLOW_ONCE, Decision.DENY)
    replies = [reply(call("run_command", command=_touch("allowed"))),
               reply(call("run_command", command=_touch("denied"))), reply(text="ok")]
    _, session = await _run(tmp_path, replies, desk)  # the default policy: on-request
    assert [r.reason.value for r in desk.asked] == ["unsandboxed", "unsandboxed"]
    assert "WITHOUT a sandbox" in desk.asked[0].why
    first, second = _results(session)
    assert first.ok and (tmp_path / "allowed").exists()  # type: ignore[attr-defined]
    assert second.error_kind.value == "denied" and not (tmp_path / "denied").exists()  # type: ignore[attr-defined]


@pytest.mark.usefixtures("no_bwrap")
async def test_never_asks_nothing_and_the_sandbox_refuses(tmp_path: Path) -> None:
    desk = Desk()
    _, session = await _run(tmp_path, [reply(call("run_command", command=_touch("n"))), reply(text="ok")],
                            desk, approvalPolicy="never")
    (result,) = _results(session)
    assert desk.asked == [] and "cannot be sandboxed here" in result.output  # type: ignore[attr-defined]
    assert not (tmp_path / "n").exists()


async def test_on_failure_offers_an_unsandboxed_rerun(tmp_path: Path) -> None:
    if not BWRAP:
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    desk = Desk(Decision.ALLOW_ONCE, Decision.DENY)
    replies = [reply(call("run_command", command=_touch(str(outside / "one")))),
               reply(call("run_command", command=_touch(str(outside / "two")))), reply(text="ok")]
    _, session = await _run(workspace, replies, desk, approvalPolicy="on-failure")
    assert [r.reason.value for r in desk.asked] == ["retry_unsandboxed", "retry_unsandboxed"]
    first, second = _results(session)
    assert first.ok and (outside / "one").exists() and "without the sandbox" in first.output  # type: ignore[attr-defined]
    assert not second.ok and not (outside / "two").exists()  # type: ignore[attr-defined]
    # The same command under on-request: it fails in the sandbox, nothing is asked.
    desk = Desk()
    _, session = await _run(workspace, [reply(call("run_command", command=_touch(str(outside / "3")))),
                                        reply(text="ok")], desk)
    assert desk.asked == [] and not (outside / "3").exists()


def test_settings_defaults_bounds_and_a_workspace_cannot_set_the_policy(tmp_path: Path) -> None:
    from lsp_agent.settings.config import ConfigError, load_settings

    defaults = load_settings(tmp_path)
    assert (defaults.approval_policy, defaults.approval_timeout_s) == ("on-request", 300)
    assert load_settings(tmp_path, {"approvalTimeoutS": 86_400}).approval_timeout_s == 86_400
    for wrong in ({"approvalTimeoutS": 0}, {"approvalTimeoutS": 86_401}, {"approvalPolicy": "sometimes"}):
        with pytest.raises(ConfigError):
            load_settings(tmp_path, wrong)
    (tmp_path / ".lsp-agent").mkdir()
    (tmp_path / ".lsp-agent" / "config.toml").write_text('approvalPolicy = "never"\n')
    assert load_settings(tmp_path).approval_policy == "on-request"  # a repository cannot switch asking off
    assert load_settings(tmp_path, {"approvalPolicy": "never"}).approval_policy == "never"
