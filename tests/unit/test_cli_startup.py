"""`lsp-agent --help` stays fast: the command line imports only what the chosen command
uses, and --help imports neither pydantic, asyncio nor the core."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_agent.cli import main as cli

PROBE = """
import sys
from lsp_agent.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted(m for m in ("pydantic", "asyncio", "httpx", "lsprotocol", "pygls", "sqlite3",
                            "lsp_agent.settings.config", "lsp_agent.core.loop", "lsp_agent.eval.cli",
                            "lsp_agent.cli.skill", "shutil")
               if m in sys.modules)
print("HEAVY:" + ",".join(heavy), file=sys.stderr)
"""


def imported_by(*argv: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60)
    line = next(x for x in done.stderr.splitlines() if x.startswith("HEAVY:"))
    return [m for m in line.removeprefix("HEAVY:").split(",") if m]


def test_help_imports_nothing_heavy() -> None:
    assert imported_by("--help") == []


def test_version_imports_nothing_heavy_nor_the_package_metadata() -> None:
    # importlib.metadata (email, zipfile, csv, ...) alone doubled the time of --version
    probe = PROBE.replace('"shutil")', '"shutil", "importlib.metadata")')
    done = subprocess.run([sys.executable, "-c", probe, "--version"], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("lsp-agent ")
    assert "HEAVY:\n" in done.stderr, done.stderr


@pytest.mark.parametrize("columns", ["50", "200"])
def test_help_wraps_as_argparse_does_with_shutil(monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)  # what shutil.get_terminal_size reads first
    ours = cli._parser(None).format_help()
    monkeypatch.setattr(cli, "_Help", argparse.HelpFormatter)  # the stock one, which asks shutil
    assert ours == cli._parser(None).format_help()


def test_a_command_help_imports_only_that_command() -> None:
    evaluating = imported_by("eval", "--help")
    assert "lsp_agent.eval.cli" in evaluating
    assert not {"lsp_agent.skills.cli", "lsp_agent.core.loop", "lsp_agent.settings.config"} & set(evaluating)
    assert "lsp_agent.eval.cli" not in imported_by("skill", "--help")


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_command_is_listed_with_the_help_its_own_parser_gives(command: str) -> None:
    full = cli._parser(command)
    (sub,) = [a for a in full._actions if a.dest == "command"]
    shown = {c.dest: c.help for c in sub._choices_actions}  # type: ignore[attr-defined]
    assert shown[command] == cli.COMMANDS[command]


def test_the_command_is_found_after_the_top_level_options() -> None:
    assert cli._chosen(["--log-level", "INFO", "run", "x"]) == "run"
    assert cli._chosen(["--log-level=INFO", "serve"]) == "serve"
    assert cli._chosen(["--help"]) is None
    assert cli._chosen(["bogus"]) is None


RUN_PROBE = """
import sys
from lsp_agent.cli.main import main
code = main(sys.argv[1:])
unneeded = sorted(m for m in sys.modules if m.split(".")[0] in ("lsprotocol", "pygls", "cattrs", "click", "rich",
                                                                 "pygments", "mcp", "ray")
                  or m.startswith(("lsp_agent.server", "lsp_agent.protocol", "lsp_agent.eval", "lsp_agent.cli.demo",
                                   "lsp_agent.cli.skill", "lsp_agent.cli.session")))
print("UNNEEDED:" + ",".join(unneeded), file=sys.stderr)
print("EXIT:%d" % code, file=sys.stderr)
"""


def scripted_run_lines(tmp_path: Path, probe: str) -> list[str]:
    """The stderr lines of `probe` (which calls `lsp_agent.cli.main.main` and reports on the process) run as
    a one-step scripted `lsp-agent run`, in a fresh interpreter; the run itself must succeed."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [{"text": "done"}]}), encoding="utf-8")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = subprocess.run([sys.executable, "-c", probe, "run", "say done", "--model", "scripted/probe",
                           "--script", str(script), "--workspace", str(workspace)],
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.splitlines()
    assert "EXIT:0" in lines, done.stderr
    return lines


def test_a_headless_run_imports_no_server_and_no_cli_extras(tmp_path: Path) -> None:
    """`lsp-agent run` holds only what it uses (peak RSS): no LSP stack (lsprotocol, pygls, cattrs, the server and its
    protocol models), no other command's modules, and not httpx's own command line (click, rich,
    pygments: ≈ 5 MB), which httpx imports whenever those are installed."""
    lines = scripted_run_lines(tmp_path, RUN_PROBE)
    unneeded = next(x for x in lines if x.startswith("UNNEEDED:")).removeprefix("UNNEEDED:")
    assert unneeded == "", unneeded
