"""`lsp-agent demo`: the smallest real task, run by the scripted model (no network, no key).

A temp workspace holds `result.txt` = 5 and a check that wants 4. Three scenarios
show the three verification outcomes; the scripted model's words never decide them.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from lsp_agent.providers.scripted import Script, ScriptedCall, ScriptedReply

CHECK = """\
import pathlib, sys
value = pathlib.Path("result.txt").read_text().strip()
if value == "4":
    print("check passed: result.txt holds 4")
    sys.exit(0)
print(f"check failed: result.txt holds {value!r}, expected '4'")
sys.exit(1)
"""

PROMPT = "result.txt must hold 4 (check.py checks it). Fix it and verify."


def _call(name: str, **arguments: object) -> ScriptedCall:
    return ScriptedCall(name=name, arguments=dict(arguments))


def _reply(text: str = "", reasoning: str = "", *calls: ScriptedCall) -> ScriptedReply:
    return ScriptedReply(text=text, reasoning=reasoning, tool_calls=list(calls))


READ = _reply("", "Read the file first.", _call("read_file", path="result.txt"))
VERIFY = _reply("", "Run the project's check.", _call("verify_project"))

SCENARIOS: dict[str, tuple[Script, int]] = {
    "ok": (Script(label="demo: ok", replies=[
        READ,
        _reply("", "It holds 5; the check wants 4.",
               _call("apply_patch", path="result.txt", old_text="5", new_text="4")),
        VERIFY,
        _reply("result.txt now holds 4, and verify_project passed."),
    ]), 40),
    "wrong-write": (Script(label="demo: wrong-write", replies=[
        READ,
        _reply("", "I am sure the answer is 5.",
               _call("apply_patch", path="result.txt", old_text="5", new_text="5\n")),
        VERIFY,
        _reply("Done: result.txt is correct and verified."),  # a claim, not evidence
    ]), 40),
    "budget": (Script(label="demo: budget", replies=[
        READ,
        VERIFY,
        _reply("", "The check failed; try 3.", _call("apply_patch", path="result.txt", old_text="5", new_text="3")),
        _reply("unreachable: the step budget is spent"),
    ]), 3),
}


def make_workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="lsp-agent-demo-"))
    (root / "result.txt").write_text("5", encoding="utf-8")
    (root / "check.py").write_text(CHECK, encoding="utf-8")
    config = root / ".lsp-agent" / "config.toml"
    config.parent.mkdir()
    python = sys.executable.replace("\\", "\\\\")
    config.write_text(f'[[tools.verify]]\nkind = "test"\nargv = ["{python}", "check.py"]\n', encoding="utf-8")
    (root / ".gitignore").write_text(".lsp-agent/\n", encoding="utf-8")
    git = ["git", "-c", "user.name=lsp-agent demo", "-c", "user.email=demo@localhost"]
    try:
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        subprocess.run([*git, "add", "-A"], cwd=root, check=True)
        subprocess.run([*git, "commit", "-q", "-m", "demo fixture"], cwd=root, check=True)
    except (OSError, subprocess.CalledProcessError):
        pass  # git is optional: the envelope then has no revision
    return root
