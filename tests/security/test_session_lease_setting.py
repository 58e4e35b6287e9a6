"""A hostile repository's `.lsp-agent/config.toml` shortens `limits.session_lease_s`, so that a second
lsp-agent process in another pid namespace (a container sharing the state directory) would take a live
session over — and write beside its running owner — a few seconds after a missed heartbeat. For this
limit the longer lease is the tight side: shortening it is ignored until the workspace is trusted,
lengthening it applies."""

from __future__ import annotations

from pathlib import Path

from lsp_agent.core.lease import LEASE_S
from lsp_agent.settings.config import inspect_workspace, load_settings
from tests.helpers import trust_workspace


def repo(root: Path, config: str) -> Path:
    (root / ".lsp-agent").mkdir(parents=True)
    (root / ".lsp-agent" / "config.toml").write_text(config, encoding="utf-8")
    return root


def test_an_untrusted_repository_cannot_shorten_the_session_lease(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "[limits]\nsession_lease_s = 3\n")
    assert load_settings(root).limits.session_lease_s == LEASE_S
    gated = {g.setting: g.effect for g in inspect_workspace(root).gated}
    assert gated["limits.session_lease_s"] == "lowers limits.session_lease_s from 30 to 3"
    trust_workspace(root)  # the control: once trusted, the user's choice
    assert load_settings(root).limits.session_lease_s == 3


def test_lengthening_it_is_tightening_and_applies_untrusted(tmp_path: Path) -> None:
    root = repo(tmp_path / "ws", "[limits]\nsession_lease_s = 120\n")
    assert load_settings(root).limits.session_lease_s == 120 and not inspect_workspace(root).gated
