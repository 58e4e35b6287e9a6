"""The editor's language intelligence as tools, over stdio: a real pytest-lsp client declares
`experimental.lspAgent.editorQueries` and answers `agent/editorQuery` from a small table standing in
for the editor's language servers; the scripted (or loopback) model calls the tools."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import Editor, StartEditor, eventually, full_capabilities
from tests.e2e.test_lsp_edits import tool_uses
from tests.e2e.test_lsp_run import CALC, make_calc_workspace
from tests.helpers import call, reply
from tests.providers.loopback import LoopbackServer, Reply, turn

MAIN = "from calc import add\n\nprint(add(1, 2))\nprint(add(3, 4))\n"
LIBRARY = "file:///usr/lib/python3.12/typing.py"
EVERY_KIND = ["definition", "references", "hover", "documentSymbols", "workspaceSymbols", "diagnostics"]


def declaring(kinds: list[str]) -> types.ClientCapabilities:
    caps = full_capabilities()
    caps.experimental = {"lspAgent": {"editorQueries": kinds}}
    return caps


def span(line: int, start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


def make_workspace(root: Path) -> None:
    make_calc_workspace(root)
    (root / "main.py").write_text(MAIN, encoding="utf-8")


def language_servers(editor: Editor, errors: Callable[[str], list[dict[str, Any]]] | None = None
                     ) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    """The editor's answers: `add` is defined in calc.py and used three times in main.py (and once
    in a library outside the workspace)."""
    calc, main = editor.uri("calc.py"), editor.uri("main.py")
    add_symbol = {"name": "add", "kind": 12, "range": span(0, 0, 14), "selectionRange": span(0, 4, 7)}

    async def answer(params: dict[str, Any]) -> Any:
        kind, uri = params["kind"], params.get("uri")
        if kind == "definition":
            return {"locations": [{"uri": calc, "range": span(0, 4, 7)}]}
        if kind == "references":
            return {"locations": [{"uri": main, "range": span(3, 6, 9)}, {"uri": calc, "range": span(0, 4, 7)},
                                  {"uri": main, "range": span(0, 17, 20)}, {"uri": main, "range": span(2, 6, 9)},
                                  {"uri": LIBRARY, "range": span(10, 4, 7)}]}
        if kind == "hover":
            return {"contents": {"kind": "markdown", "value": "```python\ndef add(a, b) -> int\n```\nAdds."}}
        if kind == "documentSymbols":
            return {"symbols": [add_symbol] if uri == calc else []}
        if kind == "workspaceSymbols":
            return {"symbols": [{"name": "add", "kind": 12, "location": {"uri": calc, "range": span(0, 4, 7)}}]}
        if kind == "diagnostics":
            text = editor.text("calc.py") if calc in editor.buffers else (editor.root / "calc.py").read_text()
            found = errors(text) if errors else []
            return {"diagnostics": [{"uri": calc, "diagnostics": found}]}
        raise JsonRpcException(message=f"no {kind}", data={"kind": "notSupported"})

    return answer


def output_of(editor: Editor, generation: str, tool: str) -> str:
    (use,) = tool_uses(editor, generation, tool)
    return str(use["state"]["output"])


async def test_each_tool_answers_with_workspace_paths_and_a_line_of_context(
        workspace: Path, start_editor: StartEditor) -> None:
    make_workspace(workspace)
    editor = await start_editor(workspace, [reply(
        call("find_definition", path="main.py", symbol="add", line=3),
        call("find_references", path="calc.py", symbol="add"),
        call("hover", path="main.py", line=3, column=7),
        call("document_symbols", path="calc.py"),
        call("workspace_symbols", query="add"),
        call("editor_diagnostics")), reply(text="done")], capabilities=declaring(EVERY_KIND))
    editor.answer_query = language_servers(editor)
    started = await editor.run("where is add used?")
    await editor.finished(started["generation"])
    generation = started["generation"]

    assert output_of(editor, generation, "find_definition") == (
        "OK: 1 definition(s) for main.py:3:7:\ncalc.py:1:5: def add(a, b):")
    assert output_of(editor, generation, "find_references") == (
        "OK: 5 reference(s) for calc.py:1:5:\n"
        "calc.py:1:5: def add(a, b):\n"
        "main.py:1:18: from calc import add\n"
        "main.py:3:7: print(add(1, 2))\n"
        "main.py:4:7: print(add(3, 4))\n"
        "python3.12/typing.py:11 (outside the workspace, read-only): def add(a, b) -> int")
    assert output_of(editor, generation, "hover").startswith("OK: hover at main.py:3:7:\n```python\ndef add(a, b)")
    assert output_of(editor, generation, "document_symbols") == "OK: 1 symbol(s) in calc.py:\nFunction add (line 1)"
    assert output_of(editor, generation, "workspace_symbols") == (
        "OK: 1 symbol(s) match 'add':\nFunction add: calc.py:1:5")
    assert output_of(editor, generation, "editor_diagnostics") == (
        "OK: the editor reports no problems in the workspace (some language servers check only the files open "
        "in the editor; verify_project runs the project's own checks)")
    # The editor was asked in UTF-16 positions of the document, by URI; the library file was never read.
    definition = next(q for q in editor.queries if q["kind"] == "definition")
    assert definition == {"kind": "definition", "uri": editor.uri("main.py"),
                          "position": {"line": 2, "character": 6}}


async def test_a_name_found_in_several_places_is_listed_not_guessed(workspace: Path,
                                                                    start_editor: StartEditor) -> None:
    make_workspace(workspace)
    editor = await start_editor(workspace, [reply(call("find_definition", path="main.py", symbol="add")),
                                            reply(text="done")], capabilities=declaring(EVERY_KIND))
    editor.answer_query = language_servers(editor)
    started = await editor.run("find add")
    await editor.finished(started["generation"])

    (use,) = tool_uses(editor, started["generation"], "find_definition")
    assert use["state"]["status"] == "error"
    assert use["state"]["output"] == (
        "ERROR: 'add' matches 3 places in main.py; call again with `line` (and `column`) of the one you mean:\n"
        "  main.py:1:18: from calc import add\n  main.py:3:7: print(add(1, 2))\n  main.py:4:7: print(add(3, 4))")
    assert not [q for q in editor.queries if q["kind"] == "definition"]  # nothing asked on a guess


async def test_locations_outside_the_workspace_are_refused_when_the_setting_says_so(
        workspace: Path, start_editor: StartEditor) -> None:
    make_workspace(workspace)
    (workspace / "lib.py").symlink_to("/usr/lib/python3.12/typing.py")  # inside by name, outside for real
    editor = await start_editor(
        workspace, [reply(call("find_references", path="calc.py", line=1, column=5)), reply(text="done")],
        capabilities=declaring(EVERY_KIND), init_options={"editorQueries": {"outsideWorkspace": "refuse"}})
    inner = language_servers(editor)

    async def with_symlink(params: dict[str, Any]) -> Any:
        answer = await inner(params)
        if params["kind"] == "references":
            answer["locations"].append({"uri": editor.uri("lib.py"), "range": span(0, 0, 3)})
        return answer

    editor.answer_query = with_symlink
    started = await editor.run("who uses add")
    await editor.finished(started["generation"])

    output = output_of(editor, started["generation"], "find_references")
    assert output.endswith("main.py:4:7: print(add(3, 4))\n(a location outside the workspace, not shown)")
    assert "typing" not in output and "lib.py" not in output


async def test_an_editor_that_does_not_answer_or_has_no_language_server_gives_classified_errors(
        workspace: Path, start_editor: StartEditor) -> None:
    make_workspace(workspace)
    (workspace / "lib.rs").write_text("fn add() {}\n", encoding="utf-8")
    editor = await start_editor(
        workspace, [reply(call("hover", path="calc.py", symbol="add")),
                    reply(call("document_symbols", path="lib.rs")), reply(text="done")],
        capabilities=declaring(["hover", "documentSymbols"]), init_options={"editorQueries": {"timeoutS": 0.5}})

    released = asyncio.Event()

    async def slow_or_missing(params: dict[str, Any]) -> Any:
        if params["uri"].endswith(".rs"):
            raise JsonRpcException(message="rust-analyzer is not installed", data={"kind": "noLanguageServer"})
        if params["kind"] == "hover":
            await released.wait()  # the editor hangs (until the test is over: then its late answer is ignored)
        return {"symbols": []}

    editor.answer_query = slow_or_missing
    started = await editor.run("look")
    finish = await editor.finished(started["generation"])
    released.set()
    assert finish["stopReason"] == "final"

    (hover,) = tool_uses(editor, started["generation"], "hover")
    assert hover["state"]["status"] == "error"
    assert hover["state"]["output"] == (
        "ERROR: the editor did not answer (hover of calc.py) within 0.5s [no_answer]")
    assert output_of(editor, started["generation"], "document_symbols") == (
        "ERROR: no language server for .rs in the editor: rust-analyzer is not installed [no_language_server]")


@pytest_asyncio.fixture
async def model() -> AsyncIterator[LoopbackServer]:
    srv = LoopbackServer()
    await srv.start()
    srv.fallback = Reply(chunks=[turn("chat", text="done")])
    yield srv
    await srv.close()


async def tool_lists(workspace: Path, start_editor: StartEditor, model: LoopbackServer,
                     capabilities: types.ClientCapabilities, settings: dict[str, Any] | None = None
                     ) -> list[list[str]]:
    editor = await start_editor(workspace, capabilities=capabilities, init_options={
        "model": "loop/m", "providers": {"loop": {"baseUrl": model.url, "maxRetries": 0}}, **(settings or {})})
    editor.answer_query = language_servers(editor)
    model.queue(Reply(chunks=[turn("chat", call=("c1", "read_file", {"path": "calc.py"}))]))
    started = await editor.run("read calc")
    await editor.finished(started["generation"])
    return [[t["function"]["name"] for t in r.json()["tools"]] for r in model.requests]


async def test_only_declared_kinds_become_tools_in_a_fixed_order_and_every_request_lists_the_same(
        workspace: Path, start_editor: StartEditor, model: LoopbackServer) -> None:
    make_workspace(workspace)
    first, second = await tool_lists(workspace, start_editor, model,
                                      declaring(["hover", "references", "formatting"]))
    assert first == second  # prefix-stable: the same tools, in the same order, every request
    assert first[-2:] == ["find_references", "hover"]  # the kinds' order, not the client's; unknown ignored
    assert not {"find_definition", "document_symbols", "editor_diagnostics"} & set(first)


async def test_a_client_that_declares_nothing_gets_no_editor_tools(
        workspace: Path, start_editor: StartEditor, model: LoopbackServer) -> None:
    make_workspace(workspace)
    first, second = await tool_lists(workspace, start_editor, model, full_capabilities())
    assert first == second
    assert not {"find_definition", "find_references", "hover", "editor_diagnostics"} & set(first)


async def test_a_kind_switched_off_in_the_settings_is_no_tool(
        workspace: Path, start_editor: StartEditor, model: LoopbackServer) -> None:
    make_workspace(workspace)
    first, _ = await tool_lists(workspace, start_editor, model, declaring(EVERY_KIND),
                                {"editorQueries": {"disabledKinds": ["hover", "workspaceSymbols"]}})
    assert first[-4:] == ["find_definition", "find_references", "document_symbols", "editor_diagnostics"]


def undefined_names(text: str) -> list[dict[str, Any]]:
    """A stand-in type checker: every `c` and `d` operand is an undefined name."""
    found = []
    for number, line in enumerate(text.splitlines()):
        for at in (i for i in range(len(line)) if line.startswith(("+ c", "+ d"), i)):
            name = line[at + 2]
            found.append({"range": span(number, at + 2, at + 3), "severity": 1, "source": "stand-in",
                              "message": f'"{name}" is not defined'})
    return found


async def test_an_edit_reports_the_new_errors_bounded_and_verification_stays_with_verify_project(
        workspace: Path, start_editor: StartEditor) -> None:
    make_workspace(workspace)
    (workspace / "calc.py").write_text(CALC + "\n\ndef old(a):\n    return a + d\n", encoding="utf-8")
    broken = reply(call("apply_patch", path="calc.py", old_text="    return a - b\n",
                        new_text="    total = a + b\n    return total + c + d + c\n"))
    editor = await start_editor(
        workspace, [broken, reply(text="done")], capabilities=declaring(["diagnostics"]),
        init_options={"editorQueries": {"diagnosticsSettleS": 0.1, "diagnosticsNoteLines": 2}})
    editor.open("calc.py")
    editor.answer_query = language_servers(editor, undefined_names)
    started = await editor.run("fix add")
    finish = await editor.finished(started["generation"])

    output = output_of(editor, started["generation"], "apply_patch")
    assert output.endswith(
        "The editor reports 3 new error(s) in the edited files (its language servers; not a verification — only "
        "verify_project verifies):\n"
        '  calc.py:3:20: "c" is not defined [stand-in]\n'
        '  calc.py:3:24: "d" is not defined [stand-in]\n'
        "  ... 1 more")  # the old "d" in old() was there before: not new; the note is cut at two lines
    assert finish["verification"] == "not_run"  # errors in the note do not fail anything: nothing verified


async def test_the_note_after_an_edit_leaves_a_passing_check_verified(workspace: Path,
                                                                      start_editor: StartEditor) -> None:
    make_workspace(workspace)
    fix = reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n"))
    editor = await start_editor(
        workspace, [fix, reply(call("verify_project")), reply(text="done")], capabilities=declaring(["diagnostics"]),
        init_options={"editorQueries": {"diagnosticsSettleS": 0.1}})
    editor.open("calc.py")
    editor.answer_query = language_servers(editor, lambda text: [
        {"range": span(1, 4, 10), "severity": 1, "message": "stale warning seen as an error"}]
        if "a + b" in text else [])
    started = await editor.run("fix add")
    finish = await editor.finished(started["generation"])

    assert "The editor reports 1 new error(s)" in output_of(editor, started["generation"], "apply_patch")
    assert finish["verification"] == "verified"  # only verify_project decides


async def test_positions_go_to_the_editor_in_utf16_and_come_back_in_characters(
        workspace: Path, start_editor: StartEditor) -> None:
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    (workspace / "emoji.py").write_text("from calc import add\nx = '😀😀'; y = add(1, 2)\n", encoding="utf-8")
    editor = await start_editor(workspace, [reply(call("find_references", path="emoji.py", line=2, symbol="add")),
                                            reply(text="done")], capabilities=declaring(["references"]))

    async def answer(params: dict[str, Any]) -> Any:
        # `add` on line 2 starts at character 16 in UTF-16 (each emoji is two units), 14 in code points
        assert params["position"] == {"line": 1, "character": 16}
        return {"locations": [{"uri": editor.uri("emoji.py"), "range": span(1, 16, 19)}]}

    editor.answer_query = answer
    started = await editor.run("who uses add")
    await editor.finished(started["generation"])
    assert output_of(editor, started["generation"], "find_references") == (
        "OK: 1 reference(s) for emoji.py:2:15:\nemoji.py:2:15: x = '😀😀'; y = add(1, 2)")


async def test_callers_and_implementations_share_one_tool(workspace: Path, start_editor: StartEditor) -> None:
    make_workspace(workspace)
    editor = await start_editor(
        workspace, [reply(call("find_implementations", path="calc.py", symbol="add", relation="callHierarchy"),
                          call("find_implementations", path="calc.py", symbol="add", relation="typeDefinition")),
                    reply(text="done")], capabilities=declaring(["callHierarchy", "implementation"]))
    main = editor.uri("main.py")

    async def answer(params: dict[str, Any]) -> Any:
        caller = {"name": "<module>", "kind": 2, "uri": main, "range": span(0, 0, 3), "selectionRange": span(0, 0, 3)}
        return {"calls": [{"from": caller, "fromRanges": [span(3, 6, 9), span(2, 6, 9)]}]}

    editor.answer_query = answer
    started = await editor.run("who calls add")
    await editor.finished(started["generation"])
    callers, type_definition = tool_uses(editor, started["generation"], "find_implementations")
    assert callers["state"]["output"] == ("OK: 2 caller(s) for calc.py:1:5:\n<module>: main.py:3:7: print(add(1, 2))\n"
                                          "<module>: main.py:4:7: print(add(3, 4))")
    assert type_definition["state"]["output"] == (
        "ERROR: the editor does not answer typeDefinition; it answers: implementation, callHierarchy")


async def test_a_settings_change_keeps_the_declared_tools_and_applies_the_switches(
        workspace: Path, start_editor: StartEditor, model: LoopbackServer) -> None:
    make_workspace(workspace)
    editor = await start_editor(workspace, capabilities=declaring(["references", "hover"]), init_options={
        "model": "loop/m", "providers": {"loop": {"baseUrl": model.url, "maxRetries": 0}}})
    first = await editor.run("one")
    await editor.finished(first["generation"])
    editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"lspAgent": {
        "model": "loop/m", "providers": {"loop": {"baseUrl": model.url, "maxRetries": 0}},
        "editorQueries": {"disabledKinds": ["hover"]}}}))
    second = await editor.run("two")
    await editor.finished(second["generation"])

    before, after = ([t["function"]["name"] for t in r.json()["tools"]] for r in model.requests)
    assert before[-2:] == ["find_references", "hover"]
    assert after == before[:-1]  # the user's switch applies from the next run; the declared kinds stay


async def test_a_path_leaving_the_workspace_is_refused_before_the_editor_is_asked(
        workspace: Path, start_editor: StartEditor) -> None:
    make_workspace(workspace)
    editor = await start_editor(workspace, [reply(call("editor_diagnostics", path="../outside.py"),
                                                  call("hover", path="../outside.py", line=1)),
                                            reply(text="done")], capabilities=declaring(EVERY_KIND))
    editor.answer_query = language_servers(editor)
    started = await editor.run("look outside")
    await editor.finished(started["generation"])
    for tool in ("editor_diagnostics", "hover"):
        (use,) = tool_uses(editor, started["generation"], tool)
        assert use["state"]["status"] == "error" and "path_denied" in use["state"]["output"]
    assert editor.queries == []


async def test_cancelling_the_run_stops_waiting_for_an_editor_that_hangs(workspace: Path,
                                                                         start_editor: StartEditor) -> None:
    make_workspace(workspace)
    editor = await start_editor(workspace, [reply(call("hover", path="calc.py", symbol="add")), reply(text="x")],
                                capabilities=declaring(["hover"]), init_options={"editorQueries": {"timeoutS": 120}})
    released = asyncio.Event()

    async def hang(params: dict[str, Any]) -> Any:
        await released.wait()
        return {"contents": None}

    editor.answer_query = hang
    started = await editor.run("hover add")

    async def asked() -> bool:
        return bool(editor.queries)

    await eventually(asked)
    await editor.request("agent/cancel", {"sessionID": started["sessionID"]})
    finish = await editor.finished(started["generation"])  # long before the 120 s the editor was given
    released.set()
    assert finish["stopReason"] == "cancelled"
    (hover,) = tool_uses(editor, started["generation"], "hover")
    assert "cancelled" in hover["state"]["output"]


async def test_answers_are_bounded_and_say_how_much_was_left_out(workspace: Path,
                                                                 start_editor: StartEditor) -> None:
    make_workspace(workspace)
    editor = await start_editor(workspace, [reply(call("find_references", path="calc.py", symbol="add")),
                                            reply(text="done")], capabilities=declaring(EVERY_KIND),
                                init_options={"editorQueries": {"maxResults": 2}})
    editor.answer_query = language_servers(editor)
    started = await editor.run("who uses add")
    await editor.finished(started["generation"])
    assert output_of(editor, started["generation"], "find_references") == (
        "OK: 5 reference(s) for calc.py:1:5:\ncalc.py:1:5: def add(a, b):\nmain.py:1:18: from calc import add\n"
        "... 3 more not shown (narrow the question)")
