"""Run Task in a real VS Code window: palette → prompt → the transcript streams → the edit lands in the
open editor's buffer → the file is saved (by the harness with auto-save off, by the editor with
afterDelay) → the check passes → the status bar says `Agent: verified`."""

from __future__ import annotations

import pytest

from tests.e2e_vscode.conftest import AUTOSAVE, PY, OpenVSCode
from tests.helpers import call, reply

CHECK = "import pathlib, sys\nsys.exit(0 if pathlib.Path('data.py').read_text() == 'VALUE = 2\\n' else 1)\n"
FILES = {"data.py": "VALUE = 1\n", "check.py": CHECK}
FIRST = "I will set VALUE to 2."
LAST = "Done: VALUE is 2 and the check passes."
REPLIES = [
    reply(call("apply_patch", path="data.py", old_text="VALUE = 1", new_text="VALUE = 2"), text=FIRST, delay_ms=300),
    # the pauses keep the run going long enough to watch the transcript fill in while it runs
    reply(call("verify_project"), delay_ms=1500),
    reply(text=LAST, delay_ms=1500),
]


@pytest.mark.parametrize("autosave", AUTOSAVE)
def test_run_task_streams_edits_the_buffer_saves_and_ends_verified(open_vscode: OpenVSCode, autosave: str) -> None:
    vs = open_vscode(autosave, REPLIES, files=FILES, verify=[PY, "check.py"])
    vs.open_file("data.py")
    assert vs.editor_text() == "VALUE = 1"
    transcript = vs.show_transcript()

    vs.command("LSP Agent: Run Task")
    vs.answer_input("set VALUE to 2")

    # streamed: the first reply shows while the run still goes on (its last reply is not there yet)
    transcript.get_by_text(FIRST).wait_for(timeout=30_000)
    assert LAST not in vs.transcript_text()
    vs.wait_editor_text(lambda text: "VALUE = 2" in text, "the agent's edit")

    vs.status("Agent: verified", timeout_ms=60_000)
    transcript.get_by_text(LAST).wait_for(timeout=10_000)
    assert "verified" in str(transcript.locator(".entry.finish").last.inner_text())
    assert (vs.workspace / "data.py").read_text(encoding="utf-8") == "VALUE = 2\n"
    assert not vs.tab_dirty("data.py"), "the edited buffer is still unsaved"
    if autosave == "off":
        vs.doc_screenshot("vscode-run-verified")

    # the edit is an ordinary buffer edit: Undo in the editor restores the old text
    vs.page.locator(".editor-group-container.active .monaco-editor .view-lines").first.click()
    vs.page.keyboard.press("Control+Z")
    vs.wait_editor_text(lambda text: text == "VALUE = 1", "the text from before the edit after Undo")
