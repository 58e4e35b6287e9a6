"""The headless CLI with no editor: the language servers named in `editorQueries.languageServers`
are started by the harness itself and answer the editor-query tools. All real: `lsp-agent run` as a
process, basedpyright from the venv, a small Python project; only the model is scripted.

Covers: the navigation tools name the right workspace-relative places; an edit that introduces a
type error carries the note naming it (the server is re-sent the edited file before it is asked);
no setting, no tools; a program that is not installed is a classified error and the run goes on;
no language server process outlives the run; a repository's own config cannot name one; the
navigation eval example runs end to end offline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.app.toolset import default_tools
from lsp_agent.langserver.program import resolve_program
from lsp_agent.settings import workspace_trust
from lsp_agent.settings.config import inspect_workspace, load_settings

PY = sys.executable
BASEDPYRIGHT = resolve_program("basedpyright-langserver")
needs_basedpyright = pytest.mark.skipif(BASEDPYRIGHT is None, reason="basedpyright is not installed (the dev extra)")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "eval"

GEOM = 'def area(width: int, height: int) -> int:\n    """The area of a rectangle."""\n    return width * height\n'
# "é" before the call: its UTF-16 and code-point columns agree here, but a position that skipped the
# conversion on a line with an astral character would not; the line itself is checked below.
APP = 'from geom import area\n\n\ndef report() -> int:\n    return area(2, 3)\n'
SHOP = 'from geom import area\n\nLABEL = "é"\nTOTAL = area(4, 5)\n'
PROJECT = {"geom.py": GEOM, "app.py": APP, "shop.py": SHOP}
BASEDPYRIGHT_ON = ('editorQueries.languageServers=[{"command" = ["basedpyright-langserver", "--stdio"], '
                   '"extensions" = [".py"]}]')
EDITOR_TOOLS = ("find_definition", "find_references", "hover", "document_symbols", "workspace_symbols",
                "editor_diagnostics", "find_implementations")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def project(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    for name, text in (files or PROJECT).items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def run_agent(tmp_path: Path, root: Path, replies: list[dict[str, Any]], *config: str,
              timeout_s: float = 240) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, Any]]]:
    """One `lsp-agent run --json`; the tool results by call ID (call_<reply>_<index>)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"label": "headless", "replies": replies}))
    pairs = [arg for pair in config for arg in ("--config", pair)]
    proc = subprocess.run([PY, "-m", "lsp_agent", "run", "--workspace", str(root), "--model", "scripted/t",
                           "--script", str(script), "--json", *pairs, "--", "look around"],
                          capture_output=True, text=True, timeout=timeout_s, env=dict(os.environ), check=False)
    results: dict[str, dict[str, Any]] = {}
    for line in proc.stdout.splitlines():
        event = json.loads(line)
        if event.get("type") == "tool_use":
            part = event["part"]
            results[part["callID"]] = {"tool": part["tool"], **part["state"]}
    return proc, results


def processes_in(root: Path) -> list[int]:
    """Processes whose working directory is `root` (a language server runs there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if Path(os.readlink(entry / "cwd")) == root.resolve():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@needs_basedpyright
def test_definition_references_and_hover_come_from_the_started_server(tmp_path: Path) -> None:
    root = project(tmp_path)
    replies: list[dict[str, Any]] = [
        {"tool_calls": [call("find_definition", path="app.py", symbol="area", line=5),
                        call("find_references", path="geom.py", symbol="area"),
                        call("hover", path="shop.py", symbol="area", line=4),
                        call("document_symbols", path="geom.py"),
                        call("no_such_tool")]},
        {"text": "done"},
    ]
    proc, results = run_agent(tmp_path, root, replies, BASEDPYRIGHT_ON, "editorQueries.timeoutS=90")
    assert proc.returncode == 0, proc.stderr
    definition, references, hover, symbols, unknown = (results[f"call_0_{i}"] for i in range(5))
    assert definition["status"] == "completed", definition
    assert definition["output"].splitlines()[1:] == ["geom.py:1:5: def area(width: int, height: int) -> int:"]
    assert references["output"].splitlines()[1:] == [
        "app.py:1:18: from geom import area", "app.py:5:12: return area(2, 3)",
        "geom.py:1:5: def area(width: int, height: int) -> int:",
        "shop.py:1:18: from geom import area", "shop.py:4:9: TOTAL = area(4, 5)"]
    assert "def area" in hover["output"] and "The area of a rectangle." in hover["output"], hover
    assert "Function area (line 1)" in symbols["output"], symbols
    # The tools the request offered: the defaults, then the editor's kinds in their fixed order.
    offered = unknown["output"].split("Available tools: ", 1)[1].rstrip(".").split(", ")
    kinds = ("definition", "references", "hover", "documentSymbols", "workspaceSymbols", "diagnostics",
             "typeDefinition", "callHierarchy")
    assert offered == [t.name for t in default_tools(load_settings(None), kinds)]
    assert processes_in(root) == []  # the server was stopped with the run


@needs_basedpyright
def test_an_edit_that_breaks_a_type_carries_the_new_error(tmp_path: Path) -> None:
    root = project(tmp_path)
    replies: list[dict[str, Any]] = [
        {"tool_calls": [call("editor_diagnostics", path="app.py"),
                        call("apply_patch", path="app.py", old_text="return area(2, 3)",
                             new_text='return area(2, "3")')]},
        {"tool_calls": [call("editor_diagnostics", path="app.py", errors_only=True),
                        call("apply_patch", path="app.py", old_text='return area(2, "3")',
                             new_text="return area(2, 3)")]},
        {"text": "done"},
    ]
    proc, results = run_agent(tmp_path, root, replies, BASEDPYRIGHT_ON, "editorQueries.timeoutS=90")
    assert proc.returncode == 0, proc.stderr
    assert results["call_0_0"]["output"].startswith("OK: the editor reports no problems in app.py"), results
    edit = results["call_0_1"]["output"]
    assert "1 new error(s) in the edited files" in edit, edit
    assert 'app.py:5:20: Argument of type "Literal[\'3\']"' in edit, edit
    listed = results["call_1_0"]["output"]
    assert listed.startswith("OK: 1 problem(s) in app.py:\napp.py:5:20: error:"), listed
    fixed = results["call_1_1"]["output"]
    assert "no new errors in the edited files" in fixed, fixed


@needs_basedpyright
def test_an_edit_in_one_module_shows_in_the_diagnostics_of_its_importer(tmp_path: Path) -> None:
    root = project(tmp_path)
    replies: list[dict[str, Any]] = [
        {"tool_calls": [call("editor_diagnostics", path="app.py"),
                        call("apply_patch", path="geom.py", old_text="-> int:\n", new_text="-> str:\n"),
                        call("editor_diagnostics", path="app.py", errors_only=True)]},
        {"text": "done"},
    ]
    proc, results = run_agent(tmp_path, root, replies, BASEDPYRIGHT_ON, "editorQueries.timeoutS=90")
    assert proc.returncode == 0, proc.stderr
    assert "no problems in app.py" in results["call_0_0"]["output"]
    after = results["call_0_2"]["output"]
    assert after.startswith("OK: 1 problem(s) in app.py:\napp.py:5:12: error: Type \"str\" is not assignable"), after


def test_without_the_setting_there_are_no_editor_tools(tmp_path: Path) -> None:
    root = project(tmp_path)
    proc, results = run_agent(tmp_path, root, [{"tool_calls": [call("find_definition", path="app.py",
                                                                    symbol="area")]}, {"text": "done"}])
    assert proc.returncode == 0, proc.stderr
    output = results["call_0_0"]["output"]
    assert "there is no tool named 'find_definition'" in output
    assert not any(name in output.split("Available tools: ", 1)[1] for name in EDITOR_TOOLS)


def test_a_missing_program_is_a_classified_failure_and_the_run_goes_on(tmp_path: Path) -> None:
    root = project(tmp_path)
    missing = ('editorQueries.languageServers=[{"command" = ["lsp-agent-no-such-langserver", "--stdio"], '
               '"extensions" = [".py"]}]')
    replies: list[dict[str, Any]] = [{"tool_calls": [call("find_definition", path="app.py", symbol="area", line=5),
                                                     call("find_definition", path="notes.rs", line=1),
                                                     call("read_file", path="geom.py")]},
                                     {"text": "done"}]
    (root / "notes.rs").write_text("fn main() {}\n")
    proc, results = run_agent(tmp_path, root, replies, missing)
    assert proc.returncode == 0, proc.stderr
    assert "'lsp-agent-no-such-langserver' was not found" in proc.stderr
    failed = results["call_0_0"]
    assert failed["status"] == "error" and failed["output"].endswith("[failed]"), failed
    assert "the language server program 'lsp-agent-no-such-langserver' was not found" in failed["output"]
    other = results["call_0_1"]["output"]
    assert "no language server for .rs" in other and other.endswith("[no_language_server]"), other
    assert results["call_0_2"]["status"] == "completed"
    assert json.loads(proc.stdout.splitlines()[-1])["stopReason"] == "final"


def test_a_workspace_config_cannot_name_a_language_server_even_when_trusted(tmp_path: Path) -> None:
    root = project(tmp_path)
    marker = tmp_path / "started"
    (root / ".lsp-agent").mkdir()
    (root / ".lsp-agent" / "config.toml").write_text(
        "[tools]\nallowed_programs = [\"make\"]\n\n"  # a gated setting: there is something to trust
        "[editorQueries]\ntimeoutS = 1\n\n[[editorQueries.languageServers]]\n"
        f'command = ["sh", "-c", "touch {marker}"]\nextensions = [".py"]\n')
    view = inspect_workspace(root)
    assert "editorQueries.languageServers" in view.refused
    assert load_settings(root, view=view).editor_queries.language_servers == []
    workspace_trust.trust(view, view.hash)
    trusted = inspect_workspace(root)
    assert trusted.state == "trusted"
    settings = load_settings(root, view=trusted)
    assert settings.editor_queries.language_servers == [] and settings.editor_queries.timeout_s == 1
    proc, results = run_agent(tmp_path, root, [{"tool_calls": [call("find_definition", path="app.py",
                                                                    symbol="area")]}, {"text": "done"}])
    assert proc.returncode == 0, proc.stderr
    assert "there is no tool named 'find_definition'" in results["call_0_0"]["output"]
    assert not marker.exists()


@needs_basedpyright
def test_the_navigation_eval_example_runs_both_arms_offline(tmp_path: Path) -> None:
    copy = tmp_path / "eval"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns("hidden", "tasks"))
    manifest = json.loads((copy / "navigation.json").read_text())
    manifest["repetitions"] = 1
    (copy / "navigation.json").write_text(json.dumps(manifest))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    run = subprocess.run([PY, "-m", "lsp_agent", "eval", "run", "navigation.json"], capture_output=True, text=True,
                         timeout=600, cwd=copy, env=env, check=False)
    assert run.returncode == 0, run.stderr
    assert "preflight: arm tools-on: language server basedpyright-langserver found" in run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines()]
    attempts = [r for r in records if r["type"] == "attempt"]
    assert len(attempts) == 4 and all(a["outcome"] == "verified" for a in attempts), run.stderr
    # tools-on's script calls find_definition, find_references (x2) and editor_diagnostics besides the six
    # edits, tools-off's search_code twice: none of them failed (an absent tool would be an error).
    calls = {(a["arm"], a["metrics"]["toolCalls"], a["metrics"]["toolErrors"]) for a in attempts}
    assert calls == {("tools-on", 10, 0), ("tools-off", 8, 0)}, calls
    (tmp_path / "runs.ndjson").write_text(run.stdout)
    compare = subprocess.run([PY, "-m", "lsp_agent", "eval", "compare", str(tmp_path / "runs.ndjson"), "tools-off",
                              "tools-on"], capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert compare.returncode == 0, compare.stderr
    assert "100.0% (2/2)" in compare.stdout, compare.stdout


def test_preflight_stops_an_arm_whose_language_server_is_not_installed(tmp_path: Path) -> None:
    manifest = json.loads((EXAMPLES / "navigation.json").read_text())
    manifest["arms"][1]["config"]["editorQueries"]["languageServers"][0]["command"] = ["lsp-agent-no-such-server"]
    path = tmp_path / "navigation.json"
    path.write_text(json.dumps(manifest))
    shutil.copytree(EXAMPLES / "navigation", tmp_path / "navigation")
    run = subprocess.run([PY, "-m", "lsp_agent", "eval", "run", str(path)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path, check=False)
    assert run.returncode == 4 and run.stdout == "", run.stderr
    assert "arm tools-on: the language server program 'lsp-agent-no-such-server' was not found" in run.stderr


async def started(root: Path, command: list[str], **entry: Any) -> Any:
    from lsp_agent.disk.documents import DiskDocuments
    from lsp_agent.langserver.queries import start_language_servers

    settings = load_settings(None, {"editorQueries": {"timeoutS": 2, "languageServers": [
        {"command": command, "extensions": [".py"], **entry}]}}).editor_queries
    return await start_language_servers(root, DiskDocuments(root), settings)


@pytest.mark.parametrize(("command", "entry", "reason"), [
    (["sh", "-c", "exit 3"], {}, "the language server sh exited with code 3"),
    (["sh", "-c", "exec sleep 60"], {"startTimeoutS": 1},
     "the language server sh did not answer `initialize` within 1s"),
])
async def test_a_server_that_exits_or_never_answers_is_a_classified_failure(
        tmp_path: Path, command: list[str], entry: dict[str, Any], reason: str) -> None:
    from lsp_agent.core.editor_queries import EditorQueryError, QueryFailure, QueryKind, SpotPosition

    root = project(tmp_path)
    editor = await started(root, command, **entry)
    try:
        assert editor.problems() == [f"{reason}; queries about .py files will say so"]
        with pytest.raises(EditorQueryError) as raised:
            await editor.query(QueryKind.DEFINITION, "app.py", SpotPosition(4, 11))
        assert raised.value.failure is QueryFailure.FAILED and reason in raised.value.message
    finally:
        await editor.aclose()
    assert processes_in(root) == []


@needs_basedpyright
async def test_a_paused_server_is_no_answer_and_a_killed_one_says_how_it_died(tmp_path: Path) -> None:
    import signal

    from lsp_agent.core.editor_queries import EditorQueryError, QueryFailure, QueryKind, SpotPosition

    root = project(tmp_path)
    editor = await started(root, ["basedpyright-langserver", "--stdio"])
    try:
        assert editor.problems() == []
        answer = await editor.query(QueryKind.DEFINITION, "app.py", SpotPosition(4, 11))
        assert [(s.path, s.start.line) for s in answer.spots] == [("geom.py", 0)]
        pid = editor.connections[0].pid
        os.killpg(pid, signal.SIGSTOP)  # the wrapper and the node process it runs
        try:
            with pytest.raises(EditorQueryError) as raised:
                await editor.query(QueryKind.HOVER, "app.py", SpotPosition(4, 11))
            assert raised.value.failure is QueryFailure.NO_ANSWER, raised.value.message
            assert "did not answer (hover of app.py) within 2s" in raised.value.message
        finally:
            os.killpg(pid, signal.SIGCONT)
        os.killpg(pid, signal.SIGKILL)
        with pytest.raises(EditorQueryError) as raised:
            await editor.query(QueryKind.REFERENCES, "app.py", SpotPosition(4, 11))
        assert raised.value.failure is QueryFailure.FAILED
        assert "the language server basedpyright-langserver was killed by signal 9" in raised.value.message
    finally:
        await editor.aclose()
    assert processes_in(root) == []


async def test_the_server_gets_the_scrubbed_environment_in_the_workspace(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("LSP_AGENT_TEST_SECRET", "also-not")
    root = project(tmp_path)
    editor = await started(root, ["sh", "-c", "env > seen-env.txt; pwd > seen-cwd.txt; exit 3"])
    await editor.aclose()
    seen = (root / "seen-env.txt").read_text()
    assert "sk-must-not-leak" not in seen and "also-not" not in seen and "PATH=" in seen
    assert (root / "seen-cwd.txt").read_text().strip() == str(root.resolve())


@needs_basedpyright
def test_a_run_cancelled_by_a_signal_leaves_no_language_server_behind(tmp_path: Path) -> None:
    import signal

    root = project(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"label": "cancel", "replies": [
        {"tool_calls": [call("find_definition", path="app.py", symbol="area", line=5)]},
        {"text": "never reached", "delay_ms": 120_000}]}))
    agent = subprocess.Popen([PY, "-m", "lsp_agent", "run", "--workspace", str(root), "--model", "scripted/t",
                              "--script", str(script), "--json", "--config", BASEDPYRIGHT_ON,
                              "--config", "editorQueries.timeoutS=90", "--", "look"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert agent.stdout is not None
        for line in agent.stdout:  # the query was answered: the server runs
            if '"type":"tool_use"' in line.replace(" ", ""):
                assert processes_in(root), "the language server should be running now"
                break
        agent.send_signal(signal.SIGTERM)
        agent.communicate(timeout=60)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    assert agent.returncode == 128 + signal.SIGTERM
    assert processes_in(root) == []
