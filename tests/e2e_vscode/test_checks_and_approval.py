"""A failing check in a real VS Code window: its diagnostic in the editor, and the "Ask the agent to
fix this" quick fix starting a run about it. The approval prompt: with `lspAgent.approvalPolicy`
`untrusted` a command waits for the card in the agent view (no modal); "Allow once" runs it, "Deny"
does not."""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.e2e.test_lsp_run import CALC, CHECK  # the calc.py workspace whose mypy-style check fails on line 2
from tests.e2e_vscode.conftest import AUTOSAVE, PY, TIMEOUT_MS, OpenVSCode
from tests.helpers import call, reply


@pytest.mark.parametrize("autosave", AUTOSAVE)
def test_a_failing_check_shows_a_diagnostic_with_the_ask_the_agent_to_fix_action(
        open_vscode: OpenVSCode, autosave: str) -> None:
    vs = open_vscode(autosave, [reply(call("verify_project")), reply(text="The check fails."),
                                reply(text="Looking at the failure now.")],
                     files={"calc.py": CALC, "check.py": CHECK}, verify=[PY, "check.py"], kind="typecheck",
                     parser="mypy")
    vs.open_file("calc.py")
    transcript = vs.show_transcript()
    vs.command("LSP Agent: Run Task")
    vs.answer_input("check the project")
    vs.status("Agent: failed", timeout_ms=60_000)

    squiggle = vs.page.locator(".editor-group-container.active .monaco-editor .squiggly-error").first
    squiggle.wait_for(timeout=30_000)
    # F8 (Go to Next Problem) puts the cursor on the diagnostic; then Quick Fix (Ctrl+.)
    vs.page.locator(".editor-group-container.active .monaco-editor .view-line", has_text="def add").click()
    vs.page.keyboard.press("F8")
    vs.page.locator(".marker-widget", has_text="expected 5").wait_for(timeout=10_000)
    vs.page.keyboard.press("Escape")
    action = vs.page.locator(".action-widget .monaco-list-row", has_text="Ask the agent to fix this").first
    # Under heavy load VS Code once answered "No code actions available" (1 run in 16 at load 12; not
    # understood yet: the server offers the action for any lsp-agent diagnostic in the request's
    # context): a user would press Ctrl+. again, and so does the test, at most three times.
    for attempt in range(3):
        vs.page.keyboard.press("Control+.")
        try:
            action.wait_for(timeout=10_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            vs.page.keyboard.press("Escape")
    # the only action (below the "Quick Fix" header) has the focus; a click hits the menu's pointer guard
    assert vs.page.locator(".action-widget .monaco-list-row.action").count() == 1
    vs.page.keyboard.press("Enter")

    # the quick fix started a second generation in the same session: its reply and its finish show
    transcript.get_by_text("Looking at the failure now.").wait_for(timeout=30_000)
    transcript.locator(".entry.finish").nth(1).wait_for(timeout=30_000)
    # the fix run's prompt line (kind, file, line, message) is drawn before its reply
    fix_line = transcript.locator(".entry.prompt", has_text="fix: typecheck failure in calc.py at line")
    fix_line.wait_for(timeout=10_000)
    assert "expected 5" in str(fix_line.inner_text())
    if autosave == "off":
        vs.doc_screenshot("vscode-fix-run")


@pytest.mark.parametrize("autosave", AUTOSAVE)
@pytest.mark.parametrize(("button", "runs"), [("Allow once", True), ("Deny", False)])
def test_the_inline_approval_card_decides_whether_the_command_runs(
        open_vscode: OpenVSCode, autosave: str, button: str, runs: bool) -> None:
    """The question is a card in the agent view, not a modal: the exact command, why, and what each
    choice covers. "Allow once" is clicked; "Deny" is reached with the keyboard alone (Tab, Enter)."""
    touch = "python3 -c \"open('made.txt', 'w').write('x')\""
    vs = open_vscode(autosave, [reply(call("run_command", command=touch)), reply(text="Finished.")],
                     settings={"lspAgent.approvalPolicy": "untrusted"})
    transcript = vs.show_transcript()
    vs.command("LSP Agent: Run Task")
    vs.answer_input("make the file")

    card = transcript.locator(".entry.approval", has_text="The agent wants to run run_command")
    card.wait_for(timeout=30_000)
    assert "made.txt" in str(card.locator(".approval-what").inner_text())
    covers = str(card.locator(".covers").inner_text())
    assert "only this call" in covers and "exactly" in covers and "does not run" in covers, covers
    assert vs.page.locator(".monaco-dialog-box").count() == 0, "a modal blocks the editor"
    assert not (vs.workspace / "made.txt").exists(), "the command ran before the answer"
    if autosave == "off" and runs:
        vs.doc_screenshot("vscode-approval")
    if button == "Deny":
        card.focus()
        focused = ""
        for _ in range(5):  # Allow once → Allow for session: … → Deny
            vs.page.keyboard.press("Tab")
            focused = str(transcript.locator(":focus").inner_text())
            if focused == "Deny":
                break
        assert focused == "Deny", focused
        vs.page.keyboard.press("Enter")
    else:
        card.get_by_role("button", name=button, exact=True).click()

    transcript.get_by_text("Finished.").wait_for(timeout=30_000)
    assert transcript.locator(".entry.approval").count() == 0, "the answered card stays"
    assert (vs.workspace / "made.txt").exists() is runs


def test_with_the_agent_view_hidden_the_question_comes_as_a_notification(open_vscode: OpenVSCode) -> None:
    """The user went back to the Explorer while the task runs: the question comes as a notification with
    the same choices (and one to show the card); its "Allow once" answers it."""
    touch = "python3 -c \"open('made.txt', 'w').write('x')\""
    # the pause before the call leaves the user time to leave the agent view
    vs = open_vscode("off", [reply(call("run_command", command=touch), delay_ms=4000), reply(text="Finished.")],
                     settings={"lspAgent.approvalPolicy": "untrusted"})
    transcript = vs.show_transcript()
    vs.command("LSP Agent: Run Task")
    vs.answer_input("make the file")
    vs.status("Agent: running")
    vs.page.keyboard.press("Control+Shift+E")  # the Explorer takes the side bar: the agent view is hidden
    vs.page.locator(".part.sidebar .title-label", has_text="Explorer").wait_for(timeout=TIMEOUT_MS)

    toast = vs.notification("LSP Agent wants to run run_command", timeout_ms=30_000)
    assert "made.txt" in str(toast.inner_text())
    assert vs.page.locator(".monaco-dialog-box").count() == 0, "a modal blocks the editor"
    assert toast.locator(".monaco-button", has_text="Show in the Agent View").count() == 1
    toast.locator(".monaco-button", has_text="Allow once").first.click()

    vs.show_transcript()
    transcript.get_by_text("Finished.").wait_for(timeout=30_000)
    assert (vs.workspace / "made.txt").exists()
