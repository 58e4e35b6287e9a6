"""While a run goes on, in a real VS Code window: steer it from the transcript's input with Ctrl+S and
see the receipt; queue a follow-up with Enter and see it run after; cancel it from the palette."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e_vscode.conftest import AUTOSAVE, OpenVSCode
from tests.helpers import call, reply

FILES = {"data.py": "VALUE = 1\n"}
EDIT = call("apply_patch", path="data.py", old_text="VALUE = 1", new_text="VALUE = 2")


@pytest.mark.parametrize("autosave", AUTOSAVE)
def test_ctrl_s_in_the_input_steers_the_running_task_and_shows_the_receipt(
        open_vscode: OpenVSCode, autosave: str) -> None:
    vs = open_vscode(autosave, [
        reply(EDIT, text="Editing data.py.", delay_ms=300),
        # the model is slow here: the correction arrives while this request is in flight
        reply(call("read_file", path="data.py"), text="Looking again.", delay_ms=5000),
        reply(text="Finished with the correction in mind."),
    ], files=FILES)
    vs.open_file("data.py")
    transcript = vs.show_transcript()
    vs.command("LSP Agent: Run Task")
    vs.answer_input("set VALUE to 2")
    transcript.get_by_text("Editing data.py.").wait_for(timeout=30_000)
    vs.status("Agent: running")

    box = transcript.locator("#input")
    box.click()
    box.fill("also keep a comment")
    box.press("Control+s")

    receipt = transcript.locator(".entry.steer", has_text="also keep a comment")
    receipt.wait_for(timeout=30_000)
    assert re.search(r"accepted|applied", str(receipt.inner_text()), re.I), receipt.inner_text()
    # the receipt turns `applied` when the correction reaches the model at the next step boundary
    expect(receipt.locator(".badge")).to_have_text(re.compile("applied", re.I), timeout=30_000)
    transcript.get_by_text("Finished with the correction in mind.").wait_for(timeout=30_000)
    assert box.input_value() == "", "the steered draft stays in the input"
    vs.status("Agent: not_run")


@pytest.mark.parametrize("autosave", AUTOSAVE)
def test_enter_while_running_queues_a_follow_up_that_runs_after(open_vscode: OpenVSCode, autosave: str) -> None:
    vs = open_vscode(autosave, [
        reply(EDIT, text="First task: editing.", delay_ms=300),
        reply(text="First task done.", delay_ms=4000),
        reply(text="Follow-up done."),
    ], files=FILES)
    vs.open_file("data.py")
    transcript = vs.show_transcript()
    vs.command("LSP Agent: Run Task")
    vs.answer_input("set VALUE to 2")
    transcript.get_by_text("First task: editing.").wait_for(timeout=30_000)

    box = transcript.locator("#input")
    box.click()
    box.fill("then say so")
    box.press("Enter")
    vs.status("1 queued")

    transcript.get_by_text("Follow-up done.").wait_for(timeout=45_000)
    text = vs.transcript_text()
    assert text.index("First task done.") < text.index("then say so") < text.index("Follow-up done.")
    assert transcript.locator(".entry.prompt", has_text="then say so").first.inner_text().startswith("You (queued)")
    assert transcript.locator(".entry.finish").count() == 2
    vs.status("Agent: not_run")


@pytest.mark.parametrize("autosave", AUTOSAVE)
def test_cancel_from_the_palette_stops_the_run(open_vscode: OpenVSCode, autosave: str) -> None:
    vs = open_vscode(autosave, [
        reply(EDIT, text="Editing data.py.", delay_ms=300),
        reply(text="This reply never comes.", delay_ms=20_000),
    ], files=FILES)
    vs.open_file("data.py")
    transcript = vs.show_transcript()
    vs.command("LSP Agent: Run Task")
    vs.answer_input("set VALUE to 2")
    vs.wait_editor_text(lambda text: "VALUE = 2" in text, "the agent's edit")
    vs.status("Agent: running")

    vs.command("LSP Agent: Cancel")
    finish = transcript.locator(".entry.finish").first
    finish.wait_for(timeout=15_000)
    assert "stop: cancelled" in str(finish.inner_text())
    vs.status("Agent: not_run")
    assert "This reply never comes." not in vs.transcript_text()
    # what was done before the cancel stays done, in the buffer and (saved) on disk
    assert "VALUE = 2" in vs.editor_text()
