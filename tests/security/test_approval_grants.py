"""Approvals grant what they say and nothing near it.

The attack: the user allows `python3 -m pytest -q` "for the session" on a machine where commands run
without a sandbox; the model then sends `python3 -c` writing outside the workspace. It must be asked
again (here: denied), never run on the earlier grant. Also: a store written before grants were exact
(a program-wide key) grants nothing on resume; a repository's config cannot grant itself standing
approvals; the user's own rules allow exactly what their grammar says.

Real processes through the real loop; "no sandbox" is a real missing bwrap, so what is allowed runs
with the user's permissions, as in the reported attack.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_agent.core.approval import APPROVAL_EVENT, Answer, ApprovalRequest, Decision
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from lsp_agent.sandbox import probe
from lsp_agent.settings.config import load_settings, user_config_path
from tests.helpers import call, make_env, reply
from tests.security.conftest import needs_bwrap

PYTEST = "python3 -m pytest -q"


class Desk:
    """The user: answers in order, records every question."""

    def __init__(self, *answers: Decision) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def ask(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return Answer(self.answers.pop(0) if self.answers else Decision.DENY, "user")


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("LSP_AGENT_BWRAP", "/nonexistent/bwrap")
    probe.cache_clear()
    yield
    monkeypatch.undo()
    probe.cache_clear()


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "test_ok.py").write_text("def test_ok():\n    pass\n", encoding="utf-8")
    return workspace, outside


def _write_outside(outside: Path) -> str:
    return f"python3 -c \"open('{outside}/pwned', 'w').write('canary')\""


def _results(session: AgentSession) -> list[object]:
    return [p for m in session.history for p in m.tool_results()]


async def _run(workspace: Path, commands: list[str], desk: Desk, session_id: str | None = None,
               earlier: int = 0, **settings: object) -> AgentSession:
    # The scripted model answers by position in the session: a resumed one skips the earlier replies.
    replies = [reply(text="(earlier)")] * earlier + [reply(call("run_command", command=c)) for c in commands]
    env = make_env(workspace, [*replies, reply(text="done")], **settings)
    env.approver = desk
    session = AgentSession(env, session_id)
    await asyncio.wait_for(Generation(session).run("go"), 120)
    return session


@pytest.mark.usefixtures("no_bwrap")
async def test_a_session_grant_for_pytest_does_not_let_python3_c_through(places: tuple[Path, Path]) -> None:
    workspace, outside = places
    desk = Desk(Decision.ALLOW_SESSION, Decision.DENY)
    session = await _run(workspace, [PYTEST, _write_outside(outside), PYTEST], desk)
    assert not (outside / "pwned").exists()
    # asked for pytest (granted), asked again for python3 -c (denied); pytest again rode on the grant
    assert [r.what for r in desk.asked] == [PYTEST, shlex.join(shlex.split(_write_outside(outside)))]
    assert desk.asked[0].session_scope == f"exactly `{PYTEST}` in run_command, even without a sandbox"
    first, attack, again = _results(session)
    assert attack.error_kind.value == "denied"  # type: ignore[attr-defined]
    assert [r.metadata["approvals"][0]["who"] for r in (first, attack, again)] == \
        ["user", "user", "session"]  # type: ignore[attr-defined]
    stored = session.env.store.events(session.id, APPROVAL_EVENT)
    assert stored[0]["scope"] == desk.asked[0].session_scope and stored[0]["decision"] == "allow_session"


@pytest.mark.usefixtures("no_bwrap")
async def test_an_old_program_wide_grant_in_the_store_grants_nothing(places: tuple[Path, Path]) -> None:
    workspace, outside = places
    first = await _run(workspace, [], Desk())
    # What a store from before exact grants holds after "allow for session" on any python3 line.
    first.env.store.record_event(first.id, APPROVAL_EVENT, {
        "tool": "run_command", "what": PYTEST, "reason": "unsandboxed", "decision": "allow_session",
        "who": "user (editor)", "key": "run_command\x1fpython3\x1funsandboxed"})
    desk = Desk(Decision.DENY)
    resumed = await _run(workspace, [_write_outside(outside)], desk, first.id, earlier=1)
    assert not (outside / "pwned").exists() and len(desk.asked) == 1
    (result,) = _results(resumed)
    assert result.error_kind.value == "denied"  # type: ignore[attr-defined]


@pytest.mark.usefixtures("no_bwrap")
async def test_a_workspace_config_cannot_grant_itself_approvals(places: tuple[Path, Path]) -> None:
    workspace, outside = places
    (workspace / ".lsp-agent").mkdir()
    (workspace / ".lsp-agent" / "config.toml").write_text(
        '[approvals]\nallow = ["python3 *"]\n', encoding="utf-8")
    assert load_settings(workspace).approvals.allow == []
    desk = Desk(Decision.DENY)
    await _run(workspace, [_write_outside(outside)], desk)
    assert not (outside / "pwned").exists() and len(desk.asked) == 1


def _user_rule(pattern: str) -> None:
    config = user_config_path()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[approvals]\nallow = ["{pattern}"]\n', encoding="utf-8")


@needs_bwrap
async def test_a_user_rule_allows_exactly_its_words_and_is_recorded(places: tuple[Path, Path]) -> None:
    workspace, outside = places
    _user_rule("python3 -m pytest *")
    desk = Desk(Decision.DENY)
    session = await _run(workspace, [PYTEST, _write_outside(outside), "python3 -m pytest"], desk,
                         approvalPolicy="untrusted")
    assert not (outside / "pwned").exists()
    assert [r.what.split()[:2] for r in desk.asked] == [["python3", "-c"]]  # only the -c line was asked
    records = [r.metadata["approvals"][0] for r in _results(session)]  # type: ignore[attr-defined]
    assert [r["who"] for r in records] == ["rule: python3 -m pytest *", "user", "rule: python3 -m pytest *"]
    assert records[0]["scope"] == "every command matching the user's rule `python3 -m pytest *`"


@pytest.mark.usefixtures("no_bwrap")
async def test_a_user_rule_never_takes_a_command_out_of_the_sandbox(places: tuple[Path, Path]) -> None:
    # the rule matches, but this machine cannot sandbox: a person is asked (here: denied)
    workspace, outside = places
    _user_rule("python3 *")
    desk = Desk(Decision.DENY)
    await _run(workspace, [_write_outside(outside)], desk)
    assert not (outside / "pwned").exists()
    assert [r.reason.value for r in desk.asked] == ["unsandboxed"]
