"""A finished run in a real VS Code window, copied and replayed. The Copy buttons of a command's
output, an edit's diff and the model's message put exactly that text on the clipboard (read back
from the browser's clipboard). Then `/new` starts another session and `/sessions` reopens the first:
its transcript comes back whole — the step headers, the command's row with its output, the edit's
diff, the model's message and the run's stop line (the step headers without their token counts,
which the session does not store)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.e2e_vscode.conftest import AUTOSAVE, TIMEOUT_MS, OpenVSCode, VSCode
from tests.helpers import call, reply

CALC = "def add(a, b):\n    return a - b\n"
MARKER = "COPY-OUTPUT-5e1c"
PRINT = f"python3 -c \"print('{MARKER}')\""
MESSAGE = "All done: **add** in `calc.py` now multiplies."
PROMPT = "look, then change add"
#: the run's last row: the live footer, or the stop line of a replayed run
ENDED = "#entries > .entry.finish, #entries > .entry.stop"


def clipboard(vs: VSCode) -> str:
    return str(vs.page.evaluate("() => navigator.clipboard.readText()"))


def copy_and_read(vs: VSCode, button: Any, before: str) -> str:
    """Click a Copy button; the clipboard's new text once it changed from `before`."""
    button.click()
    deadline_ms = TIMEOUT_MS
    text = clipboard(vs)
    while text == before and deadline_ms > 0:
        vs.page.wait_for_timeout(100)
        deadline_ms -= 100
        text = clipboard(vs)
    assert text != before, "the clipboard did not change"
    return text


def shape(frame: Any) -> dict[str, Any]:
    """What a reader sees of a run: the rows by kind, the command's output, the diff's lines, the stop line."""
    entries = frame.locator("#entries")
    tool = frame.locator("#entries > details.entry.tool", has_text="run_command").first
    edit = frame.locator("#entries > details.entry.tool.edit").first
    return {
        # a step header's number (the live one adds the step budget and tokens, which are not stored)
        "steps": [re.sub(r"^(Step \d+).*", r"\1", str(t))
                  for t in entries.locator(":scope > .entry.step").all_inner_texts()],
        "tools": entries.locator(":scope > details.entry.tool").count(),
        "output": str(tool.locator(".section.output pre").first.text_content()),
        "diff": [str(t) for t in edit.locator(".d-del, .d-add").all_text_contents()],
        "message": str(frame.locator("#entries > .entry.text", has_text="All done").first.inner_text()),
        # the live footer and the replay's stop line word it differently; the counts are the same
        "ended": re.findall(r"\d+ steps?|\d+ tool calls? \(\d+ errors?\)",
                            str(frame.locator(ENDED).first.inner_text())),
    }


def open_rows(frame: Any) -> None:
    """Expand the command's row and the edit's row (their output and diff are drawn inside)."""
    for row in (frame.locator("#entries > details.entry.tool", has_text="run_command").first,
                frame.locator("#entries > details.entry.tool.edit").first):
        if row.get_attribute("open") is None:
            row.locator("summary").click()
        row.locator(".tool-body").first.wait_for(timeout=TIMEOUT_MS)


@pytest.mark.parametrize("autosave", AUTOSAVE)
def test_copy_buttons_put_the_exact_text_on_the_clipboard_and_a_past_session_replays_whole(
        open_vscode: OpenVSCode, autosave: str) -> None:
    vs = open_vscode(autosave, [
        reply(call("run_command", command=PRINT)),
        reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a * b\n")),
        reply(text=MESSAGE),
    ], files={"calc.py": CALC})
    vs.page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=vs.server.url)
    frame = vs.show_transcript()
    box = frame.locator("#input")
    box.click()
    box.fill(PROMPT)
    box.press("Enter")
    frame.locator("#entries > .entry.finish").wait_for(timeout=60_000)
    frame.locator("#entries > .entry.text", has_text="All done").wait_for(timeout=TIMEOUT_MS)
    open_rows(frame)
    live = shape(frame)
    assert len(live["steps"]) == 3 and live["tools"] == 2, live
    assert MARKER in live["output"], live
    assert live["diff"] == ["-    return a - b", "+    return a * b"], live
    assert live["ended"] == ["3 steps", "2 tool calls (0 errors)"], live

    # Copy: the command's output, the edit's diff, the message (its Markdown as the model wrote it)
    tool = frame.locator("#entries > details.entry.tool", has_text="run_command").first
    copied = copy_and_read(vs, tool.locator(".section.output button.copy"), clipboard(vs))
    assert copied.rstrip("\n") == live["output"].rstrip("\n") and MARKER in copied, copied
    edit = frame.locator("#entries > details.entry.tool.edit").first
    copied = copy_and_read(vs, edit.locator("button.copy[data-copy^='diff:']").first, copied)
    assert copied.startswith("--- a/calc.py\n+++ b/calc.py\n@@"), copied
    assert copied.endswith("-    return a - b\n+    return a * b"), copied
    message = frame.locator("#entries > .entry.text", has_text="All done").first
    message.hover()
    copied = copy_and_read(vs, message.locator("button.copy[data-copy='text']"), copied)
    assert copied == MESSAGE

    # /new, then /sessions reopens the first session: the same run, drawn from what the server stored
    box.click()
    box.press_sequentially("/new")
    box.press("Enter")
    frame.get_by_text("No run yet").wait_for(timeout=TIMEOUT_MS)
    box.press_sequentially("/sessions")
    box.press("Enter")
    vs.pick(PROMPT)
    frame.locator("#entries > .entry.info", has_text="Session").first.wait_for(timeout=TIMEOUT_MS)
    frame.locator(ENDED).first.wait_for(timeout=TIMEOUT_MS)
    open_rows(frame)
    replayed = shape(frame)
    assert replayed == live, f"the replay differs:\nlive:     {live}\nreplayed: {replayed}"
    frame.locator("#entries > .entry.prompt", has_text=PROMPT).wait_for(timeout=TIMEOUT_MS)
