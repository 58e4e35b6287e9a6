"""Code actions on lsp-agent diagnostics: "Ask the agent to fix this" starts a run about it."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from tests.e2e.conftest import StartEditor
from tests.e2e.test_lsp_run import make_calc_workspace
from tests.helpers import call, reply


async def test_fix_action_on_a_check_failure_runs_the_agent_with_file_line_and_message(
        workspace: Path, start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, [reply(call("verify_project")), reply(text="it fails"),
                                            reply(text="on it")])
    uri = editor.open("calc.py")
    started = await editor.run("check")
    await editor.finished(started["generation"])
    diagnostics = editor.client.diagnostics[uri]
    assert len(diagnostics) == 1

    actions = await editor.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostics[0].range,
        context=types.CodeActionContext(diagnostics=list(diagnostics))))
    assert actions is not None
    (action,) = actions
    assert isinstance(action, types.CodeAction) and action.title == "Ask the agent to fix this"
    assert action.kind == types.CodeActionKind.QuickFix and action.command is not None
    assert action.command.command == "lsp-agent.fixDiagnostic"

    result = await editor.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=action.command.command, arguments=action.command.arguments))
    assert result["sessionID"] == started["sessionID"]  # the idle session that found the failure
    await editor.finished(result["generation"])
    page = await editor.request("agent/session", {"sessionID": started["sessionID"]})
    prompt = [m for m in page["messages"] if m["role"] == "user"][-1]["parts"][0]["text"]
    assert "calc.py" in prompt and "line 2" in prompt and "expected 5" in prompt and "typecheck" in prompt


async def test_other_diagnostics_get_no_action(workspace: Path, start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, [reply(text="hi")])
    uri = editor.open("calc.py")
    foreign = types.Diagnostic(range=types.Range(start=types.Position(line=0, character=0),
                                                 end=types.Position(line=0, character=3)),
                               message="from another server", source="pyright")
    actions = await editor.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=foreign.range,
        context=types.CodeActionContext(diagnostics=[foreign])))
    assert not actions
