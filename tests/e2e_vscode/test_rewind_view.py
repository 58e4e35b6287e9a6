"""Restore to here in a real VS Code window. A run edits a file open in the editor (through its buffer)
and a command creates another; "Restore to here" on the prompt → Restore code puts both back (the
buffer and the disk), the notification's Undo brings the run's result back, and the restore is an
ordinary buffer edit Ctrl+Z takes back. The button is reached with Tab from its row; a step's restore
can be previewed as a diff first; the buttons are off while a task runs. After a second run,
"LSP Agent: Rewind…" → the second prompt → Restore conversation shows the fork: the first run stays,
the second is gone, and what the user had typed in the agent input is still there."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.e2e_vscode.conftest import TIMEOUT_MS, OpenVSCode, VSCode
from tests.helpers import call, reply

CALC = "def add(a, b):\n    return a - b\n"
EDITED = "def add(a, b):\n    return a + b\n"
MADE = "made by a command\n"
MAKE = "python3 -c \"open('made.txt', 'w').write('made by a command\\n')\""
FIRST = "change add and make a file"
SECOND = "now say something else"
SECOND_ANSWER = "Something else, said."
DRAFT = "a draft the rewind must keep"


def run_prompt(frame: Any, text: str, finished: int) -> None:
    box = frame.locator("#input")
    box.click()
    box.fill(text)
    box.press("Enter")
    frame.locator("#entries > .entry.finish").nth(finished - 1).wait_for(timeout=60_000)


def wait_for(what: str, check: Any, vs: VSCode, bound_ms: int = TIMEOUT_MS) -> None:
    """Poll `check()` (a file on disk) until it holds, within the harness's bound."""
    waited = 0
    while not check():
        if waited > bound_ms:
            raise AssertionError(f"never: {what}")
        vs.page.wait_for_timeout(200)
        waited += 200


def restore_them_too_if_asked(vs: VSCode, restored: str) -> bool:
    """The conflicts modal (files changed outside the agent since) → Restore Them Too; True if it came.
    Then the notification saying what was restored."""
    dialog = vs.page.locator(".monaco-dialog-box", has_text="changed outside the agent")
    toast = vs.page.locator(".notifications-toasts .notification-toast", has_text=restored).first
    waited = 0
    while not dialog.count() and not toast.count():
        if waited > TIMEOUT_MS:
            raise AssertionError(f"neither the conflicts modal nor {restored!r}")
        vs.page.wait_for_timeout(200)
        waited += 200
    asked = bool(dialog.count())
    if asked:
        dialog.locator(".monaco-button", has_text="Restore Them Too").click()
    return asked


def save_active_editor(vs: VSCode, saved: Any) -> None:
    """Ctrl+S in the editor, as a user would; again if the first key went elsewhere (a view still
    taking the focus), until `saved()` holds."""
    for _ in range(5):
        focus_editor(vs)
        vs.page.keyboard.press("Control+S")
        try:
            wait_for("the saved edit", saved, vs, TIMEOUT_MS // 5)
            return
        except AssertionError:
            continue
    raise AssertionError("Ctrl+S never saved the editor")


def focus_editor(vs: VSCode) -> None:
    vs.page.locator(".editor-group-container.active .monaco-editor .view-lines").first.click()


def test_restore_to_here_puts_code_back_undo_returns_it_and_rewind_forks_the_conversation(
        open_vscode: OpenVSCode) -> None:
    vs = open_vscode("off", [
        reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n")),
        reply(call("run_command", command=MAKE)),
        reply(text="Changed add and made a file."),
        reply(text=SECOND_ANSWER, delay_ms=2000),  # long enough to see the buttons off while it runs
    ], files={"calc.py": CALC})
    workspace: Path = vs.workspace
    made = workspace / "made.txt"
    vs.open_file("calc.py")
    frame = vs.show_transcript()
    run_prompt(frame, FIRST, 1)
    vs.wait_editor_text(lambda text: "a + b" in text, "the agent's edit")
    wait_for("the command's file", made.exists, vs)
    # the agent's edit is in the buffer, unsaved (nothing asked for a save); the user saves it
    assert (workspace / "calc.py").read_text() == CALC
    save_active_editor(vs, lambda: (workspace / "calc.py").read_text() == EDITED)

    # "Restore to here" on the prompt → Restore code: the open buffer and the file on disk go back
    prompt = frame.locator("#entries > .entry.prompt", has_text=FIRST).first
    # from the keyboard, like the other row actions: the row, Tab to its button, Enter
    prompt.focus()
    vs.page.keyboard.press("Tab")
    focused = prompt.locator("button.restore").evaluate("b => b === document.activeElement")
    assert focused, "Tab from the prompt's row did not reach its Restore to here button"
    vs.page.keyboard.press("Enter")
    choices = vs.page.locator(".quick-input-widget .monaco-list-row", has_text="Preview code changes")
    choices.wait_for(timeout=TIMEOUT_MS)
    vs.doc_screenshot("vscode-restore-to-here")
    vs.pick("Restore code")
    # saving the agent's own edit, unchanged, is the agent's change: the restore asks nothing
    assert not restore_them_too_if_asked(vs, "Restored 2 files"), "asked about the agent's own saved edit"
    toast = vs.notification("Restored 2 files")
    vs.wait_editor_text(lambda text: text == CALC.rstrip("\n"), "the restored buffer")
    assert not made.exists(), "the file the command made is still there"
    wait_for("the restored buffer saved", lambda: (workspace / "calc.py").read_text() == CALC, vs)

    # Undo (the notification's button) rewinds to the checkpoint the restore returned
    toast.locator(".monaco-button", has_text="Undo").click()
    vs.notification("Undone")
    vs.wait_editor_text(lambda text: "a + b" in text, "the run's edit back after Undo")
    wait_for("the command's file back", lambda: made.exists() and made.read_text() == MADE, vs)
    wait_for("the edit back on disk", lambda: (workspace / "calc.py").read_text() == EDITED, vs)

    # "Restore to here" on the command's row, previewed: the dry run's diff in a document, then Restore Code
    row = frame.locator("#entries > details.entry.tool", has_text="run_command").first
    row.locator("button.restore").click()
    vs.pick("Preview code changes first")
    vs.page.locator(".tab.active", has_text="Restore preview.diff").wait_for(timeout=TIMEOUT_MS)
    preview = vs.editor_text()
    assert preview.startswith("--- a/") and "\n+++ " in preview, preview
    dialog = vs.page.locator(".monaco-dialog-box", has_text="as the preview shows")
    dialog.locator(".monaco-button", has_text=re.compile(r"^Restore Code$")).click()
    # before the command's effects: its file goes, the edit of the step before it stays
    assert "--- a/made.txt" in preview and "+++ /dev/null" in preview and "calc.py" not in preview, preview
    assert not restore_them_too_if_asked(vs, "Restored"), "asked about the restores' own saved buffers"
    vs.notification("Restored")
    wait_for("the command's file gone after the step's restore", lambda: not made.exists(), vs)
    assert (workspace / "calc.py").read_text() == EDITED
    vs.page.locator(".tab", has_text="calc.py").first.click()
    vs.page.locator(".tab.active", has_text="calc.py").wait_for(timeout=TIMEOUT_MS)

    # the same through /rewind; the buffer's restore is an editor edit: Ctrl+Z takes it back
    box = frame.locator("#input")
    box.click()
    box.press_sequentially("/rewind")
    box.press("Enter")
    vs.pick(FIRST)
    vs.pick("Restore code")
    restore_them_too_if_asked(vs, "Restored")
    vs.notification("Restored")
    wait_for("the buffer restored to the prompt", lambda: (workspace / "calc.py").read_text() == CALC, vs)
    vs.wait_editor_text(lambda text: text == CALC.rstrip("\n"), "the restored buffer")
    focus_editor(vs)
    vs.page.keyboard.press("Control+Z")
    vs.wait_editor_text(lambda text: "a + b" in text, "the text from before the restore after Ctrl+Z")

    # a second run (the buttons are off while it runs), then Rewind… → the second prompt → Restore
    # conversation: the view shows the fork
    box.click()
    box.fill(SECOND)
    box.press("Enter")
    frame.locator("button.restore:disabled").first.wait_for(timeout=TIMEOUT_MS)
    frame.locator("#entries > .entry.finish").nth(1).wait_for(timeout=60_000)
    frame.locator("button.restore:disabled").first.wait_for(state="detached", timeout=TIMEOUT_MS)
    frame.get_by_text(SECOND_ANSWER).wait_for(timeout=TIMEOUT_MS)
    box.click()
    box.fill(DRAFT)
    vs.command("LSP Agent: Rewind…")
    vs.pick(SECOND)
    vs.pick("Restore conversation")
    vs.notification("Conversation restored")
    frame.locator("#entries > .entry.info", has_text="Session").first.wait_for(timeout=TIMEOUT_MS)
    text = vs.transcript_text()
    assert FIRST in text and SECOND not in text and SECOND_ANSWER not in text, text
    assert frame.locator("#entries > .entry.prompt").count() == 1
    assert frame.locator("#input").input_value() == DRAFT
