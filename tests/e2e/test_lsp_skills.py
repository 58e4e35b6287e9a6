"""Skill candidates through the real server over stdio: the agent/skill/* methods, and the code
actions — "Promote skill candidate NAME" appears only while promotion would succeed, and running
it promotes and opens the new SKILL.md with window/showDocument."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import Editor, StartEditor, full_capabilities
from tests.helpers import call, reply
from tests.unit.test_skills_kit import QUICK, project, proposal

SKILL = ".lsp-agent/skills/calc-tests/SKILL.md"
SCRIPT = [reply(call("verify_project")), reply(text="done")]  # every new session verifies once


async def _start(root: Path, start_editor: StartEditor) -> Editor:
    caps = full_capabilities()
    assert caps.window is not None
    caps.window.show_document = types.ShowDocumentClientCapabilities(support=True)
    return await start_editor(root, SCRIPT, capabilities=caps, init_options={"tools": QUICK})


async def _verified_session(editor: Editor) -> dict[str, str]:
    started = await editor.run("verify the project")
    finish = await editor.finished(started["generation"])
    assert finish["verification"] == "verified"
    page = await editor.request("agent/session", {"sessionID": started["sessionID"]})
    for message in page["messages"]:
        for part in message["parts"]:
            if part["type"] == "tool_result" and part["name"] == "verify_project":
                return {"sessionID": started["sessionID"], "messageID": message["id"], "partID": part["id"]}
    raise AssertionError("no verify_project result")


async def _titles(editor: Editor, uri: str) -> list[str]:
    actions = await editor.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[])))
    return [a.title for a in actions or []]


async def _run_action(editor: Editor, uri: str, title: str) -> Any:
    actions = await editor.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[])))
    (action,) = [a for a in actions or [] if a.title == title]
    assert isinstance(action, types.CodeAction) and action.command is not None
    return await _execute(editor, action.command.command, list(action.command.arguments or []))


async def _execute(editor: Editor, command: str, arguments: list[Any]) -> Any:
    result = await editor.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command, arguments=arguments))
    assert result is not None
    return result


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


async def test_promote_action_is_offered_only_when_valid_and_running_it_promotes(
        workspace: Path, start_editor: StartEditor) -> None:
    root = project(workspace)  # `proposals/` is git-ignored: drafts there keep the tree clean
    editor = await _start(root, start_editor)
    changed: list[Any] = []
    editor.client.feature("agent/skill/changed")(lambda ls, params: changed.append(params))

    source = await _verified_session(editor)
    _write(root, "proposals/calc.json", proposal("calc-tests", source))
    calc = editor.open("proposals/calc.json")
    assert await _titles(editor, calc) == ["Propose skill candidate calc-tests"]
    proposed = await _run_action(editor, calc, "Propose skill candidate calc-tests")
    assert proposed["ok"] and proposed["candidate"]["state"] == "pending", proposed
    assert await _titles(editor, calc) == []  # not validated: nothing to promote yet

    other = await _verified_session(editor)
    _write(root, "proposals/check.json", json.dumps({"name": "calc-tests", "evidence": other}))
    check = editor.open("proposals/check.json")
    assert await _titles(editor, check) == ["Validate skill candidate calc-tests"]
    validated = await _run_action(editor, check, "Validate skill candidate calc-tests")
    assert validated["ok"] and validated["candidate"]["validated"], validated

    assert await _titles(editor, calc) == ["Promote skill candidate calc-tests"]
    (root / "calc.py").write_text("def add(a, b):\n    return b + a\n", encoding="utf-8")
    assert await _titles(editor, calc) == []  # a dirty tree: promotion would fail, so it is not offered
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    view = "lsp-agent-skill:calc-tests"  # the candidate view offers it too
    assert await _titles(editor, view) == ["Promote skill candidate calc-tests"]

    promoted = await _run_action(editor, calc, "Promote skill candidate calc-tests")
    assert promoted["ok"] and promoted["path"] == SKILL, promoted
    assert (root / SKILL).read_text(encoding="utf-8").startswith("---\nname: calc-tests\n")
    assert [d.uri for d in editor.client.shown_documents] == [(root / SKILL).as_uri()]
    assert await _titles(editor, calc) == []  # active now

    listing = await editor.request("agent/skill/list")
    assert [(c["name"], c["state"]) for c in listing["candidates"]] == [("calc-tests", "active")]
    assert [s["name"] for s in listing["skills"]] == ["calc-tests"]
    for _ in range(600):  # the watcher tells the client (watchfiles, debounced): seconds under load
        if any([s["name"] for s in p["skills"]] == ["calc-tests"] for p in changed):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError(f"no agent/skill/changed listing calc-tests: {changed}")


async def test_skill_methods_answer_rules_as_results_and_bad_params_as_errors(
        workspace: Path, start_editor: StartEditor) -> None:
    root = project(workspace)
    editor = await _start(root, start_editor)
    source = await _verified_session(editor)

    refused = await editor.request("agent/skill/propose", {"text": proposal("../x", source)})
    assert refused["ok"] is False and refused["rule"] == "bad_name" and "candidate" not in refused
    proposed = await editor.request("agent/skill/propose", {"text": proposal("calc-tests", source)})
    assert proposed["ok"] and proposed["candidate"]["source"]["partID"] == source["partID"]
    same = await editor.request("agent/skill/validate", {"name": "calc-tests",
                                                         "text": json.dumps({"evidence": source})})
    assert same["ok"] is False and same["rule"] == "same_session"
    early = await editor.request("agent/skill/promote", {"name": "calc-tests"})
    assert early["ok"] is False and early["rule"] == "not_validated"

    other = await _verified_session(editor)
    validated = await editor.request("agent/skill/validate", {"name": "calc-tests",
                                                              "text": json.dumps({"evidence": other})})
    assert validated["ok"], validated
    shown = await editor.request("agent/skill/show", {"name": "calc-tests"})
    assert shown["view"].startswith("# Skill candidate calc-tests\n\nState: pending (validated)")
    promoted = await editor.request("agent/skill/promote", {"name": "calc-tests"})
    assert promoted["ok"] and promoted["uri"] == (root / SKILL).as_uri()
    assert editor.client.shown_documents == []  # the request answers with the URI; only the command opens it
    retired = await editor.request("agent/skill/retire", {"name": "calc-tests"})
    assert retired["ok"] and retired["changed"] and not (root / SKILL).exists()
    again = await editor.request("agent/skill/retire", {"name": "calc-tests"})
    assert again["ok"] and again["changed"] is False

    # "Propose skill from this verification" on a transcript result: a draft outside the worktree, opened.
    draft = await _execute(editor, "lsp-agent.skill.draft", [source])
    assert draft["ok"] and not Path(draft["path"]).is_relative_to(root), draft
    assert json.loads(Path(draft["path"]).read_text(encoding="utf-8"))["evidence"] == source
    assert [d.uri for d in editor.client.shown_documents] == [draft["uri"]]
    stale = await _execute(editor, "lsp-agent.skill.draft", [{**source, "partID": "prt_none"}])
    assert stale["ok"] is False and stale["rule"] == "part_missing"

    with pytest.raises(JsonRpcException) as bad:
        await editor.request("agent/skill/propose", {"text": "{}", "uri": "file:///x.json"})
    assert bad.value.code == -32602
    with pytest.raises(JsonRpcException) as unknown:
        await editor.request("agent/skill/promote", {"name": "calc-tests", "force": True})
    assert unknown.value.code == -32602 and "force" in str(unknown.value)
