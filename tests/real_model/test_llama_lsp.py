"""The demo task over LSP with a real model: `lsp-agent serve` over stdio (driven by pytest-lsp, as
in tests/e2e), llama-server with SmolLM2-135M behind it. The model's calls are real; the editor
gets the versioned applyEdit into its unsaved buffer, saves through agent/saveDocuments before the
check, and sees diagnostics published by the failing check and cleared by the passing one.

One model call per agent/run, each in a new session (in a continued session the 135M model echoes
the previous tool result instead of calling the tool it is asked to repeat).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Editor, StartEditor
from tests.real_model.conftest import LlamaServer
from tests.real_model.test_llama_server import repeat

RUN_TIMEOUT_S = 300.0
CHECK = """\
import pathlib, sys
value = pathlib.Path("result.txt").read_text().strip()
if value == "4":
    print("Success: no issues found in 1 source file")
    sys.exit(0)
print(f"result.txt:1: error: result.txt holds {value!r}, expected '4'  [misc]")
print("Found 1 error in 1 file (checked 1 source file)")
sys.exit(1)
"""
CONFIG = f"""\
toolProfile = "minimal"
instructionProfile = "compact"
[[tools.verify]]
kind = "typecheck"
parser = "mypy"
argv = [{json.dumps(sys.executable)}, "check.py"]
[providers.openai-compatible]
toolCallFormat = "auto"
maxRetries = 1
idleTimeoutS = 600
maxOutputTokens = 256
"""


async def one_call(editor: Editor, name: str, status: str, **arguments: Any) -> dict[str, Any]:
    """An agent/run in a new session; returns its run_finish after checking the model called `name`."""
    started = await editor.run(repeat(name, **arguments), maxSteps=1)
    finish = await editor.finished(started["generation"], timeout=RUN_TIMEOUT_S)
    events = [e["event"] for e in editor.events if e["generation"] == started["generation"]]
    uses = [(e["part"]["tool"], e["part"]["state"]["status"]) for e in events if e["type"] == "tool_use"]
    assert (name, status) in uses, f"{uses} {finish}"
    return finish


async def test_the_demo_task_over_lsp_reaches_verified(llama: LlamaServer, workspace: Path,
                                                        start_editor: StartEditor) -> None:
    (workspace / "result.txt").write_text("5\n", encoding="utf-8")
    (workspace / "check.py").write_text(CHECK, encoding="utf-8")
    (workspace / ".lsp-agent").mkdir()
    (workspace / ".lsp-agent" / "config.toml").write_text(CONFIG, encoding="utf-8")
    editor = await start_editor(workspace, init_options={
        "model": "openai-compatible/smollm2", "providers": {"openai-compatible": {"baseUrl": llama.url}}})
    uri = editor.open("result.txt")
    editor.type("result.txt", 1, 0, "\n")  # an unsaved change: buffer version 2, disk still "5\n"

    # 1. The check fails on the untouched workspace: diagnostics for result.txt.
    failed = await one_call(editor, "verify_project", "error")
    assert failed["verification"] == "failed", failed
    published = [d for u, d in editor.diagnostics if u == uri]
    assert published and published[-1], editor.diagnostics
    (diagnostic,) = published[-1]
    assert (diagnostic["source"], diagnostic["code"], diagnostic["severity"]) == ("lsp-agent", "typecheck", 1)
    assert "expected '4'" in diagnostic["message"]

    # 2. The model's apply_patch goes into the unsaved buffer as a versioned edit; disk is untouched.
    await one_call(editor, "apply_patch", "completed", path="result.txt", old_text="5", new_text="4")
    (change,) = editor.applied[-1]["edit"]["documentChanges"]
    assert change["textDocument"] == {"uri": uri, "version": 2}
    assert [e["range"]["start"]["line"] for e in change["edits"]] == [0]  # the changed line, not the file
    assert change["edits"][0]["newText"].strip() == "4"
    assert editor.text("result.txt") == "4\n\n"
    assert (workspace / "result.txt").read_text(encoding="utf-8") == "5\n"

    # 3. verify_project saves the buffer first (agent/saveDocuments), the check passes, the
    #    diagnostics are cleared, and the run ends verified.
    verified = await one_call(editor, "verify_project", "completed")
    assert verified["verification"] == "verified", verified
    assert editor.save_requests[-1] == [uri]
    assert (workspace / "result.txt").read_text(encoding="utf-8") == "4\n\n"
    assert [d for u, d in editor.diagnostics if u == uri][-1] == []
