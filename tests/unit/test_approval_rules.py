"""The grammar of the user's `[approvals] allow` rules, at its boundaries, and the scope a session
grant is shown and remembered with (lsp_agent/settings/approval_rules.py, core/approval.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_agent.acp.permission import options_for
from lsp_agent.cli.approve import question
from lsp_agent.core.approval import ApprovalRequest, ApprovalSubject, Reason, grant_of, matching_rules
from lsp_agent.settings.approval_rules import parse_rule
from lsp_agent.settings.config import ConfigError, load_settings, user_config_path


def _allows(pattern: str, command: str) -> bool:
    return parse_rule(pattern).matches(tuple(command.split()))


def test_words_match_exactly_and_a_final_star_allows_any_further_words() -> None:
    rule = "python3 -m pytest *"
    assert _allows(rule, "python3 -m pytest")  # no further words at all
    assert _allows(rule, "python3 -m pytest -q tests/test_x.py")
    assert not _allows(rule, "python3 -c print(1)")
    assert not _allows(rule, "python3 -m pytestx")  # a word is never a prefix
    assert not _allows(rule, "python3 -m")
    assert not _allows(rule, "Python3 -m pytest")  # no case folding
    assert not _allows(rule, "/usr/bin/python3 -m pytest")
    assert not _allows(rule, "python3 -m -c pytest")


def test_without_a_star_only_the_exact_argv_is_allowed() -> None:
    assert _allows("npm test", "npm test")
    assert not _allows("npm test", "npm test -- --watch")
    assert not _allows("npm test", "npm")


def test_a_program_star_rule_allows_every_run_of_it_as_written() -> None:
    # Decided, not an accident: `python3 *` says "any python3 command", -c included.
    assert _allows("python3 *", "python3 -c x")
    assert not _allows("python3 *", "python3.12 -c x")


def test_quotes_group_words_like_a_shell() -> None:
    assert parse_rule("git log '--format=%H %s' *").words == ("git", "log", "--format=%H %s")


@pytest.mark.parametrize("pattern", ["*", "", "   ", "python3 * -c", "pytest tests/*.py", "py* -m", "x 'unclosed",
                                     "x \x1b"])
def test_a_star_that_is_not_the_whole_last_word_and_other_odd_rules_are_refused(pattern: str) -> None:
    with pytest.raises(ValueError):
        parse_rule(pattern)


def test_an_invalid_rule_in_the_user_config_is_a_settings_error_naming_it(tmp_path: Path) -> None:
    config = user_config_path()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[approvals]\nallow = ["pytest tests/*.py"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"approvals\.allow.*pytest tests/\*\.py"):
        load_settings(tmp_path)


def test_a_workspace_config_cannot_set_rules_but_the_user_config_can(tmp_path: Path) -> None:
    (tmp_path / ".lsp-agent").mkdir()
    (tmp_path / ".lsp-agent" / "config.toml").write_text('maxSteps = 9\n[approvals]\nallow = ["bash *"]\n')
    settings = load_settings(tmp_path)
    assert settings.approvals.allow == [] and settings.max_steps == 9
    config = user_config_path()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[approvals]\nallow = ["make test"]\n', encoding="utf-8")
    assert load_settings(tmp_path).approvals.allow == ["make test"]


def _command(*argvs: tuple[str, ...]) -> ApprovalSubject:
    return ApprovalSubject(kind="command", what="; ".join(" ".join(a) for a in argvs), program=argvs[0][0],
                           commands=argvs)


def test_rules_must_cover_every_command_and_never_take_one_out_of_the_sandbox() -> None:
    rules = (parse_rule("python3 -m pytest *"), parse_rule("ruff check *"))
    both = _command(("python3", "-m", "pytest"), ("ruff", "check", "."))
    found = matching_rules(rules, both, Reason.UNTRUSTED)
    assert found is not None and [r.pattern for r in found] == ["python3 -m pytest *", "ruff check *"]
    assert matching_rules(rules, _command(("python3", "-m", "pytest"), ("mypy",)), Reason.UNTRUSTED) is None
    assert matching_rules(rules, _command(("ruff", "check")), Reason.RETRY_UNSANDBOXED) is None
    assert matching_rules(rules, _command(("ruff", "check")), Reason.UNSANDBOXED) is None
    mcp = ApprovalSubject(kind="mcp", what="mcp__s__t {}", program="mcp__s__t")
    assert matching_rules(rules, mcp, Reason.MCP) is None


def test_the_session_scope_names_exactly_what_is_granted() -> None:
    pytest_q = _command(("python3", "-m", "pytest", "-q"))
    assert grant_of("run_command", pytest_q, Reason.UNTRUSTED).scope == \
        "exactly `python3 -m pytest -q` in run_command"
    other = _command(("python3", "-m", "pytest", "-q", "-x"))
    assert grant_of("run_command", pytest_q, Reason.UNTRUSTED).key != grant_of("run_command", other,
                                                                               Reason.UNTRUSTED).key
    # a grant for the sandboxed run is not one for the unsandboxed run; a retry and a first run share one
    assert grant_of("run_command", pytest_q, Reason.UNTRUSTED).key != \
        grant_of("run_command", pytest_q, Reason.UNSANDBOXED).key
    assert grant_of("run_command", pytest_q, Reason.UNSANDBOXED) == \
        grant_of("run_command", pytest_q, Reason.RETRY_UNSANDBOXED)
    checks = _command(("python3", "-m", "pytest"), ("ruff", "check", "."))
    assert grant_of("verify_project", checks, Reason.UNTRUSTED).scope == \
        "exactly these checks together in verify_project: `python3 -m pytest`; `ruff check .`"
    # a word with a space is quoted, so the scope text cannot be misread
    assert "`python3 -c 'a b'`" in grant_of("run_command", _command(("python3", "-c", "a b")), Reason.UNTRUSTED).scope
    mcp = ApprovalSubject(kind="mcp", what='mcp__s__t {"a": 1}', program="mcp__s__t")
    assert grant_of("mcp__s__t", mcp, Reason.MCP).scope == "every call of mcp__s__t, whatever its arguments"


def test_the_terminal_and_the_acp_client_show_the_scope() -> None:
    request = ApprovalRequest("ses", "gen", "call", "run_command", "python3 -m pytest -q", "why", Reason.UNTRUSTED,
                              session_scope="exactly `python3 -m pytest -q` in run_command")
    assert "for this session means: exactly `python3 -m pytest -q` in run_command" in question(request)
    names = {o.option_id: o.name for o in options_for(request)}
    assert names["allow_session"] == "Allow for this session: exactly `python3 -m pytest -q` in run_command"
    assert names["allow_once"] == "Allow once"
    long = ApprovalRequest("ses", "gen", "call", "run_command", "x", "why", Reason.UNTRUSTED,
                           session_scope="exactly `" + "a" * 500 + "` in run_command")
    assert len({o.option_id: o.name for o in options_for(long)}["allow_session"]) < 160
