"""docs/troubleshooting.md stays true: every error code and kind of the protocol's error table has a
row there (a new kind gets documented), and the messages it quotes are the ones the code prints
(built here by the very functions that print them, with the doc's placeholders filled in)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from lsp_agent.core.lease import session_busy
from lsp_agent.core.storage import SessionLease, StoreReason, StoreUnavailable
from lsp_agent.protocol.errors import CODES
from lsp_agent.providers import http_base
from lsp_agent.providers.registry import NO_MODEL
from lsp_agent.sandbox.policy import unavailable_notice
from lsp_agent.sandbox.probe import Probe
from lsp_agent.store.faults import _ADVICE as ADVICE

DOC = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _code_rows() -> list[tuple[str, set[str]]]:
    """(code, kinds) of each row of the "Protocol error codes" table."""
    section = _doc().split("## Protocol error codes", 1)[1]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| -32") and len(cells) == 3:
            rows.append((cells[0], set(re.findall(r"`([a-z_]+)`", cells[1]))))
    return rows


@pytest.mark.parametrize(("code", "kind"), [(c.code, k) for c in CODES for k in c.kinds])
def test_every_error_code_and_kind_of_the_protocol_has_a_row(code: int, kind: str) -> None:
    assert any(row_code == str(code) and kind in kinds for row_code, kinds in _code_rows()), (
        f"docs/troubleshooting.md: no row for {code} `{kind}` under 'Protocol error codes'")


def test_the_table_names_no_code_the_protocol_does_not_have() -> None:
    known = {(str(c.code), k) for c in CODES for k in c.kinds}
    for code, kinds in _code_rows():
        assert {(code, k) for k in kinds} <= known, (code, kinds)


def test_no_model_is_quoted_as_printed() -> None:
    quoted = "lsp-agent: " + NO_MODEL.split("(in an editor")[0].rstrip()
    assert quoted in _doc()


@pytest.mark.parametrize("base_url", ["http://localhost:11434/v1", "BASE_URL"])
def test_a_refused_connection_is_quoted_with_its_hint(base_url: str) -> None:
    hint = http_base.connection_hint(httpx.ConnectError("refused"), base_url)
    assert hint and hint in _doc()


def test_401_hints_are_quoted_and_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VARIABLE", raising=False)
    unset = http_base._hint(401, "", b"", "URL", "BASE_URL", "chat", "VARIABLE")
    monkeypatch.setenv("VARIABLE", "a-key")
    refused = http_base._hint(401, "", b"", "URL", "BASE_URL", "chat", "VARIABLE")
    editor = http_base._hint(401, "", b"", "URL", "BASE_URL", "chat", "VARIABLE", editor_key=True)
    for hint in (unset, refused, editor):
        assert hint is not None and hint in _doc(), hint


def test_a_context_too_small_is_quoted_with_its_fix() -> None:
    hint = http_base.context_hint("maximum context length exceeded", b"{}")
    assert hint is not None
    advice = hint.split(": ", 1)[1]  # the sizes before it depend on the server's answer
    assert advice in _doc()


@pytest.mark.parametrize("reason", ["bubblewrap (bwrap) is not installed (looked in PATH)",
                                    "bubblewrap cannot create namespaces here (bwrap: …)"])
def test_the_sandbox_notice_is_quoted_as_printed(reason: str) -> None:
    notice = unavailable_notice(Probe(False, None, reason))
    shown = notice.split(" (--sandbox")[0] if "(looked in" in reason else notice.split(". run_command")[0] + "."
    assert shown in _doc(), shown


def test_store_and_session_refusals_are_quoted_as_printed() -> None:
    store = str(StoreUnavailable(StoreReason.FULL, "ADVICE (…)", "PATH")).replace("(full)", "(REASON)")
    assert f"`{store}`" in _doc()
    for reason, advice in ADVICE.items():  # each reason with the advice printed with it
        assert f"| `{reason.value}` | `{advice}`" in _doc(), reason
    busy = str(session_busy("SES", SessionLease("SES", "pid:4242", 0, 0, 0)))
    tail = busy.split("pid 4242", 1)[1]
    assert tail in _doc(), tail
