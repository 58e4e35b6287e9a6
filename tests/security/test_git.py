"""git never runs what a repository's config names, and its risky options are refused.

The hostile .git/config is planted before the run, as if the model had written it earlier in
danger-full-access (or the repository came that way): fsmonitor, an external diff, a textconv
driver and a clean filter, each of which would create a marker file in the canary directory.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.providers.loopback import LoopbackServer
from tests.security.conftest import needs_bwrap
from tests.security.kit import Attack, run_attack


def _hostile_repo(attack: Attack) -> list[Path]:
    root = attack.workspace
    (root / "a.txt").write_text("one\n", encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], cwd=root, check=True)
    # The markers go to a directory of their own: it is fine for the canary dir to be watched.
    markers = attack.outside.parent / "markers"
    markers.mkdir()
    names = ["fsmonitor", "external", "textconv", "clean", "hook"]
    config = root / ".git" / "config"
    config.write_text(config.read_text() + (
        f"[core]\n\tfsmonitor = \"touch {markers}/fsmonitor; false\"\n"
        f"[diff]\n\texternal = \"touch {markers}/external\"\n"
        f"[diff \"evil\"]\n\ttextconv = \"touch {markers}/textconv; cat\"\n"
        f"[filter \"evil\"]\n\tclean = \"touch {markers}/clean; cat\"\n\trequired = true\n"), encoding="utf-8")
    hook = root / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {markers}/hook\n", encoding="utf-8")
    hook.chmod(0o755)
    (root / ".gitattributes").write_text("*.txt diff=evil filter=evil\n", encoding="utf-8")
    (root / "a.txt").write_text("two\n", encoding="utf-8")
    return [markers / n for n in names]


@pytest.mark.parametrize("sandbox", [pytest.param("workspace-write", marks=needs_bwrap), "danger-full-access"])
async def test_repository_config_never_runs_a_program(attack: Attack, server: LoopbackServer, sandbox: str) -> None:
    # Even with no sandbox at all, the harness's git runs nothing the repository names.
    markers = _hostile_repo(attack)
    (attack.workspace / "test_ok.py").write_text("def test_ok():\n    pass\n", encoding="utf-8")
    await run_attack(attack, server, [
        ("run_command", {"command": "git status"}),
        ("run_command", {"command": "git diff"}),
        ("run_command", {"command": "git log -p -1"}),
        ("run_command", {"command": "git show HEAD:a.txt"}),
        ("list_dir", {"path": "."}),
        ("verify_project", {}),  # fingerprints the sources with git status first
    ], "--sandbox", sandbox)
    assert attack.output(1).startswith("OK: exit=0 git diff"), attack.output(1)
    assert "+two" in attack.output(1)  # the real diff, not a converted one
    assert [m.name for m in markers if m.exists()] == []
    attack.assert_contained()


REFUSED = [
    ("git -c core.pager=sh status", "options before the subcommand"),
    ("git config core.fsmonitor 'touch x'", "'git config' is never run"),
    ("git diff --ext-diff", "--ext-diff"),
    ("git log --textconv -p", "--textconv"),
    ("git show --output=evil.txt HEAD", "--output"),
    ("git diff --no-index /dev/null /etc/hostname", "--no-index"),
    ("git log --exec=sh", "--exec"),
    ("git status --upload-pack=sh", "--upload-pack"),
    ("git commit -m x", "never run by the agent"),
    ("git st", "aliases neither"),
    ("rg --pre bash x .", "--pre"),
    ("rg --pre=bash x .", "--pre"),
    ("rg --pre-glob '*' x .", "--pre-glob"),
    ("rg -z x .", "-z"),
    ("bash -c 'touch x'", "not an allowed program"),
    ("/bin/sh -c x", "is a path"),
    ("cat ../../etc/hostname", "outside the workspace"),
    ("ls ~/.ssh", "outside the workspace"),
]


async def test_argument_rules_refuse_with_a_reason(attack: Attack, server: LoopbackServer) -> None:
    # One run, one refused call per turn: each is the call's own classified error, and the run goes on.
    await run_attack(attack, server, [("run_command", {"command": command}) for command, _ in REFUSED])
    assert attack.run is not None
    for (command, says), use, out in zip(REFUSED, attack.run.of("tool_use"), attack.outputs(), strict=True):
        assert out.startswith("ERROR: refused:") and says in out, (command, out)
        assert use["part"]["state"]["status"] == "error"
    attack.assert_contained()
