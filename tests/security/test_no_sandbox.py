"""Where bubblewrap cannot run, nothing runs unsandboxed silently: the user is told once, and
every command needs the user's approval (denied where no one can be asked), or the user
chooses danger-full-access. These tests run on any machine: they point the harness at a missing bwrap.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_agent.sandbox import Sandbox, probe
from lsp_agent.settings.config import load_settings
from tests.providers.loopback import LoopbackServer
from tests.security.kit import Attack, run_attack

MISSING = {"LSP_AGENT_BWRAP": "/nonexistent/bwrap"}


async def test_without_bwrap_commands_are_refused_and_the_user_is_told_once(attack: Attack,
                                                                             server: LoopbackServer) -> None:
    (attack.workspace / "test_a.py").write_text("def test_a():\n    pass\n", encoding="utf-8")
    await run_attack(attack, server, [
        ("run_command", {"command": f"python3 -c \"open('{attack.outside}/pwned', 'w')\""}),
        ("verify_project", {}),
        ("write_file", {"path": "notes.txt", "content": "file tools still work\n"}),
    ], env=MISSING)
    assert attack.run is not None
    assert attack.run.stderr.count("commands are NOT sandboxed on this machine") == 1
    assert "bubblewrap (bwrap) is not installed" in attack.run.stderr
    run, verify, write = attack.outputs()
    assert run.startswith("ERROR: refused:") and "cannot be sandboxed here" in run and "approval" in run
    assert attack.run.of("tool_use")[0]["part"]["state"]["errorKind"] == "denied"
    # Asked first (approvalPolicy on-request); with no terminal to ask on the CLI denies: nothing ran.
    assert verify.startswith("ERROR: refused:") and "cannot be sandboxed" in verify and "cli (no terminal)" in verify
    assert write.startswith("OK: created notes.txt")
    attack.assert_contained()


async def test_danger_full_access_is_explicit_and_announced(attack: Attack, server: LoopbackServer) -> None:
    await run_attack(attack, server, [("run_command", {"command": "python3 -c 'print(42)'"})],
                     "--sandbox", "danger-full-access", env=MISSING)
    assert attack.run is not None
    assert "commands run WITHOUT any sandbox" in attack.run.stderr
    assert attack.output(0).startswith("OK: exit=0") and "42" in attack.output(0)
    attack.assert_contained()


def test_a_workspace_config_cannot_widen_the_sandbox(tmp_path: Path) -> None:
    root = tmp_path
    (root / ".lsp-agent").mkdir()
    (root / ".lsp-agent" / "config.toml").write_text(
        'sandboxMode = "danger-full-access"\nsandboxNetwork = true\nsandboxReadableRoots = ["~"]\nmaxSteps = 7\n')
    settings = load_settings(root)
    assert (settings.sandbox_mode, settings.sandbox_network, settings.sandbox_readable_roots) == \
        ("workspace-write", False, [])
    assert settings.max_steps == 7  # the rest of the file still applies
    assert load_settings(root, {"sandboxMode": "read-only"}).sandbox_mode == "read-only"


def test_the_approval_hook_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LSP_AGENT_BWRAP", "/nonexistent/bwrap")
    probe.cache_clear()
    try:
        sandbox = Sandbox(root=Path("/"), mode="workspace-write")
        assert sandbox.needs_approval() == ("no sandbox: bubblewrap (bwrap) is not installed "
                                            "(looked in /nonexistent/bwrap)")
        prepared = sandbox.prepare(["true"], Path("/"), approved_unsandboxed=True)
        assert prepared.argv == ["true"] and not prepared.sandboxed and "LSP_AGENT_BWRAP" not in prepared.env
        assert Sandbox(root=Path("/"), mode="danger-full-access").needs_approval() is None
    finally:
        probe.cache_clear()
