"""What the agent did, readable in a real VS Code window: the edit's unified diff inline (a
collapsed row a keyboard user expands with Enter), the failing check expanded with the failing
test and the first traceback lines, the file name a link into the editor, the model's Markdown,
and the footer saying in words what the verification means — and changing when a write after the
run makes the check stale."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e_vscode.conftest import AUTOSAVE, PY, TIMEOUT_MS, OpenVSCode
from tests.helpers import call, reply

CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.mark.parametrize("autosave", AUTOSAVE)
def test_a_run_shows_the_inline_diff_and_the_failing_check_expanded(open_vscode: OpenVSCode, autosave: str) -> None:
    vs = open_vscode(
        autosave,
        [reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a * b\n")),
         reply(call("verify_project")), reply(text="The **check** still fails: `add` multiplies.")],
        files={"calc.py": CALC, "test_calc.py": TEST},
        verify=[PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_calc.py"], kind="test", parser="pytest")
    transcript = vs.show_transcript()
    vs.command("LSP Agent: Run Task")
    vs.answer_input("make add right")
    vs.status("Agent: failed", timeout_ms=60_000)

    # the failing check opened by itself: the failing test (a link to its line) and the traceback
    check = transcript.locator("details.entry.tool.check-failed[open]")
    check.wait_for(timeout=TIMEOUT_MS)
    assert "1 failing" in str(check.locator(".check-title").inner_text())
    failing = check.locator(".failures a.file-link", has_text="test_calc.py::test_add")
    failing.wait_for(timeout=TIMEOUT_MS)
    assert failing.get_attribute("data-open-path") == "test_calc.py"
    assert "assert" in str(check.locator(".traceback").inner_text())

    # the edit's row starts collapsed; with the keyboard alone it opens on its unified diff
    edit = transcript.locator("details.entry.tool.edit")
    assert edit.get_attribute("open") is None
    edit.focus()
    vs.page.keyboard.press("Enter")
    transcript.locator("details.entry.tool.edit[open]").wait_for(timeout=TIMEOUT_MS)
    assert str(edit.locator(".d-del").inner_text()) == "-    return a - b"
    assert str(edit.locator(".d-add").inner_text()) == "+    return a * b"
    # j moves to the next row (the next step's header)
    vs.page.keyboard.press("j")
    focused = transcript.locator(":focus")
    assert "step" in str(focused.get_attribute("class"))

    # the model's text is Markdown; the footer says what "failed" means
    transcript.locator(".entry.text strong", has_text="check").wait_for(timeout=TIMEOUT_MS)
    verdict = str(transcript.locator(".entry.finish .verdict").inner_text())
    assert "Failed: the last check failed" in verdict, verdict

    if autosave == "off":
        vs.doc_screenshot("vscode-transcript-check-diff")

    # the file name in the diff is a link: the file opens in the editor
    edit.locator(".diff-head a.file-link", has_text="calc.py").click()
    vs.page.locator(".tab.active", has_text="calc.py").wait_for(timeout=TIMEOUT_MS)

    # a change outside the agent after the run (here: another program reverts calc.py) makes the
    # check stale: the footer says so in words and the status item follows
    (vs.workspace / "calc.py").write_text(CALC, encoding="utf-8")
    transcript.locator(".entry.finish .verdict", has_text="changed calc.py after the check after the run").wait_for(
        timeout=30_000)
    assert "Not verified" in str(transcript.locator(".entry.finish .verdict").inner_text())
    vs.status("Agent: not_run", timeout_ms=30_000)


def committed(workspace: Path) -> None:
    commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"]
    for argv in (["init", "-q"], ["add", "-A"], commit):
        subprocess.run(["git", *argv], cwd=workspace, check=True)


def test_reverting_the_agents_edit_through_review_changes_turns_the_footer_to_your_revert(
        open_vscode: OpenVSCode) -> None:
    """The run's check stood (it failed after the edit); the user reverts the edit through Review
    Changes: the footer names the revert as the user's own, and the status item is `not_run`."""
    vs = open_vscode(
        "off",
        [reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a * b\n")),
         reply(call("verify_project")), reply(text="Still failing.")],
        files={"calc.py": CALC, "test_calc.py": TEST},
        verify=[PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_calc.py"], kind="test", parser="pytest",
        prepare=committed)  # Review Changes takes a file's before-text from git
    transcript = vs.show_transcript()
    vs.command("LSP Agent: Run Task")
    vs.answer_input("make add right")
    vs.status("Agent: failed", timeout_ms=60_000)

    vs.command("LSP Agent: Revert File Change")
    vs.pick("calc.py")
    vs.status("reverted calc.py", timeout_ms=30_000)

    verdict = transcript.locator(".entry.finish .verdict", has_text="your revert changed calc.py after the check")
    verdict.wait_for(timeout=30_000)
    vs.status("Agent: not_run", timeout_ms=30_000)
    assert (vs.workspace / "calc.py").read_text(encoding="utf-8") == CALC


def test_a_long_command_output_shows_head_and_tail_and_opens_whole_in_an_editor(open_vscode: OpenVSCode) -> None:
    count = "python3 -c \"print('\\n'.join(f'row {i}' for i in range(1, 121)))\""
    vs = open_vscode("off", [reply(call("run_command", command=count)), reply(text="Counted.")])
    transcript = vs.show_transcript()
    vs.command("LSP Agent: Run Task")
    vs.answer_input("count")
    transcript.get_by_text("Counted.").wait_for(timeout=60_000)

    row = transcript.locator("details.entry.tool", has_text="run_command")
    assert row.get_attribute("open") is None
    row.locator("summary").click()
    output = row.locator(".section.output")
    output.wait_for(timeout=TIMEOUT_MS)
    shown = str(output.inner_text())
    assert "row 1\n" in shown and "row 120" in shown and "row 60\n" not in shown, shown
    assert "lines not shown" in shown

    output.locator("button.open-output").click()
    vs.page.locator(".tab.active", has_text="run_command output.txt").wait_for(timeout=TIMEOUT_MS)
    vs.wait_editor_text(lambda text: "row 35" in text, "the whole output in an editor")
