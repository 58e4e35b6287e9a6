"""The editor's language intelligence as the agent's tools, in a real VS Code window: the TypeScript
server that ships with VS Code answers `agent/editorQuery` for a function defined in one file and used
in two others. A loopback model calls find_definition, find_references, hover, the callers and the
editor's problems (and the outline of a Rust file, which nothing answers for); the tool results it gets
back name the right workspace-relative files and lines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e_vscode.conftest import TIMEOUT_MS, OpenVSCode
from tests.e2e_vscode.turns_model import Turn, TurnsModel, serve_turns

FILES = {
    "tsconfig.json": json.dumps({"compilerOptions": {"strict": True, "module": "commonjs", "target": "es2020"},
                                 "include": ["src"]}),
    "src/util.ts": "export function addTotals(a: number, b: number): number {\n  return a + b;\n}\n",
    "src/main.ts": "import { addTotals } from './util';\n\nexport const sum = addTotals(1, 2);\n",
    "src/report.ts": ("import { addTotals } from './util';\n\nexport function report(): string {\n"
                      "  return String(addTotals(3, 4));\n}\n"),
    # a type error: the TypeScript server has loaded the project once the editor shows it
    "src/broken.ts": "export const count: number = 'three';\n",
    # VS Code knows Rust by name (a grammar) but nothing here answers for it
    "src/lib.rs": "pub fn add_totals(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("find_definition", {"path": "src/main.ts", "symbol": "addTotals", "line": 3}),
    ("find_references", {"path": "src/util.ts", "symbol": "addTotals"}),
    ("hover", {"path": "src/report.ts", "symbol": "addTotals", "line": 4}),
    ("find_implementations", {"path": "src/util.ts", "symbol": "addTotals", "relation": "callHierarchy"}),
    ("editor_diagnostics", {"path": "src/broken.ts"}),
    ("document_symbols", {"path": "src/lib.rs"}),
]
EDITOR_TOOLS = ["find_definition", "find_references", "hover", "document_symbols", "workspace_symbols",
                "editor_diagnostics", "find_implementations"]
ANSWER = "addTotals is defined in src/util.ts and used in main.ts and report.ts."


@pytest.fixture
def turns_model() -> Iterator[TurnsModel]:
    yield from serve_turns([Turn(call=call) for call in CALLS] + [Turn(text=ANSWER)])


def write_project(workspace: Path) -> None:
    for name, text in FILES.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text, encoding="utf-8")


def offered_tools(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools") or []]


def ask(vs: Any, prompt: str, answer: str) -> None:
    frame = vs.show_transcript()
    box = frame.locator("#input")
    box.click()
    box.press_sequentially(prompt)
    box.press("Enter")
    frame.get_by_text(answer).wait_for(timeout=120_000)


def tool_results(model: TurnsModel) -> dict[str, str]:
    """What each tool call returned to the model (the tool messages of the last request), by tool name."""
    messages = model.requests[-1]["messages"]
    names = {call["id"]: call["function"]["name"]
             for m in messages if m["role"] == "assistant" for call in m.get("tool_calls") or []}
    return {names[m["tool_call_id"]]: str(m["content"]) for m in messages if m["role"] == "tool"}


@pytest.mark.parametrize("restricted", [False, True], ids=["trusted", "restricted_mode"])
def test_the_model_navigates_with_vscodes_typescript_server(open_vscode: OpenVSCode, turns_model: TurnsModel,
                                                            restricted: bool) -> None:
    # Restricted Mode changes nothing here: the queries only read what the editor already knows.
    vs = open_vscode("off", [], configured=False, prepare=write_project, restricted=restricted,
                     settings={"lspAgent.providers": {"loop": {"baseUrl": turns_model.base_url, "maxRetries": 0}},
                               "lspAgent.model": "loop/tiny"})
    vs.open_file("broken.ts")  # the TypeScript server starts for the open file's project
    problems = vs.page.locator("#workbench\\.parts\\.statusbar .statusbar-item[id='status.problems']")
    problems.filter(has_text="1").first.wait_for(timeout=120_000)
    ask(vs, "where is addTotals used?", ANSWER)
    # every kind VS Code answers became a tool, after the others, in the protocol's order
    assert offered_tools(turns_model.requests[0])[-len(EDITOR_TOOLS):] == EDITOR_TOOLS

    results = tool_results(turns_model)
    for name, output in results.items():
        print(f"--- {name}\n{output}")
    assert results["find_definition"] == (
        "OK: 1 definition(s) for src/main.ts:3:20:\n"
        "src/util.ts:1:17: export function addTotals(a: number, b: number): number {")
    # the import lines count too: they name the function
    assert results["find_references"] == (
        "OK: 5 reference(s) for src/util.ts:1:17:\n"
        "src/main.ts:1:10: import { addTotals } from './util';\n"
        "src/main.ts:3:20: export const sum = addTotals(1, 2);\n"
        "src/report.ts:1:10: import { addTotals } from './util';\n"
        "src/report.ts:4:17: return String(addTotals(3, 4));\n"
        "src/util.ts:1:17: export function addTotals(a: number, b: number): number {")
    assert results["hover"].startswith("OK: hover at src/report.ts:4:17:"), results["hover"]
    # TypeScript describes the imported name (an alias of the function) with its signature
    assert "addTotals(a: number, b: number): number" in results["hover"], results["hover"]
    assert "src/report.ts:4" in results["find_implementations"], results["find_implementations"]
    assert "src/broken.ts:1:" in results["editor_diagnostics"], results["editor_diagnostics"]
    assert "error" in results["editor_diagnostics"]
    assert results["document_symbols"] == (
        "ERROR: no language server for .rs in the editor: no extension in VS Code provides language features for "
        "rust [no_language_server]")
    # the transcript shows the calls as rows
    vs.transcript().locator(".entry", has_text="find_references").first.wait_for(timeout=TIMEOUT_MS)


def test_the_setting_off_offers_the_model_no_editor_tools(open_vscode: OpenVSCode) -> None:
    for model in serve_turns([Turn(text="No tools needed.")]):
        vs = open_vscode("off", [], configured=False, prepare=write_project,
                         settings={"lspAgent.providers": {"loop": {"baseUrl": model.base_url, "maxRetries": 0}},
                                   "lspAgent.model": "loop/tiny", "lspAgent.editorQueries.enabled": False})
        ask(vs, "hello", "No tools needed.")
        offered = offered_tools(model.requests[0])
        assert "read_file" in offered and not set(EDITOR_TOOLS) & set(offered), offered


EDIT_DONE = "main.ts now passes a string."


def test_an_edit_that_breaks_the_types_comes_back_with_the_editors_new_error(open_vscode: OpenVSCode) -> None:
    """The agent's edit lands in the open tab; the TypeScript server re-checks it, and the edit's own
    result carries the error it reports — before any check runs (and without making it verified)."""
    edit = ("apply_patch", {"path": "src/main.ts", "old_text": "addTotals(1, 2)", "new_text": "addTotals(1, 'two')"})
    for model in serve_turns([Turn(call=edit), Turn(text=EDIT_DONE)]):
        vs = open_vscode("off", [], configured=False, prepare=write_project,
                         settings={"lspAgent.providers": {"loop": {"baseUrl": model.base_url, "maxRetries": 0}},
                                   "lspAgent.model": "loop/tiny"})
        vs.open_file("broken.ts")
        problems = vs.page.locator("#workbench\\.parts\\.statusbar .statusbar-item[id='status.problems']")
        problems.filter(has_text="1").first.wait_for(timeout=120_000)  # the TypeScript server has the project
        vs.open_file("main.ts")  # the TypeScript extension checks the files open in a tab
        ask(vs, "pass a string to addTotals in main.ts", EDIT_DONE)
        result = tool_results(model)["apply_patch"]
        print(result)
        assert "The editor reports 1 new error(s) in the edited files" in result, result
        assert "src/main.ts:3:" in result and "not assignable to parameter of type 'number'" in result, result
        assert "only verify_project verifies" in result
        # the error the file had before the edit (none) and broken.ts's (not edited) are not listed
        assert "broken.ts" not in result
