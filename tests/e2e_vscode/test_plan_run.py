"""Plan, then run it, in a real VS Code window. In Plan mode the model answers with a `## Plan`
message; under it the transcript offers "Run It in Agent Mode". Pressing it — with the mouse, or with
the keyboard alone (Escape from the input to the offer, Tab, Enter) — switches the composer to Agent
mode and runs the plan as the next task: the edit the plan names lands in the file, which Plan mode
would have refused."""

from __future__ import annotations

import time

import pytest

from tests.e2e_vscode.conftest import TIMEOUT_MS, OpenVSCode
from tests.helpers import call, reply

CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
PLAN = "## Plan\n1. In calc.py, make `add` return `a + b`.\n2. Nothing else."


@pytest.mark.parametrize("how", ["click", "keyboard"])
def test_a_plan_made_in_plan_mode_runs_in_agent_mode_from_its_button(open_vscode: OpenVSCode, how: str) -> None:
    vs = open_vscode("off", [
        reply(text=PLAN),  # the Plan-mode run
        reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n")),
        reply(text="Done: add adds."),  # the Agent-mode run of the plan
    ], files={"calc.py": CALC})
    frame = vs.show_transcript()
    vs.command("Choose a Mode (Agent, Plan, Ask)")
    vs.pick("Plan")
    mode = frame.locator("#mode")
    mode.filter(has_text="Plan").wait_for(timeout=TIMEOUT_MS)

    box = frame.locator("#input")
    box.click()
    box.fill("how would you fix add?")
    box.press("Enter")
    offer = frame.locator(".plan-offer button.run-plan", has_text="Run It in Agent Mode")
    offer.wait_for(timeout=60_000)
    frame.locator("#entries > .entry.text", has_text="In calc.py, make").wait_for(timeout=TIMEOUT_MS)
    assert (vs.workspace / "calc.py").read_text(encoding="utf-8") == CALC
    if how == "click":
        offer.click()
    else:
        box.focus()
        vs.page.keyboard.press("Escape")  # to the newest row: the offer
        frame.locator(".plan-offer:focus").wait_for(timeout=TIMEOUT_MS)
        vs.page.keyboard.press("Tab")
        frame.locator(".plan-offer button.run-plan:focus").wait_for(timeout=TIMEOUT_MS)
        vs.page.keyboard.press("Enter")

    mode.filter(has_text="Agent").wait_for(timeout=TIMEOUT_MS)
    frame.locator("#entries > .entry.prompt", has_text="Carry out this plan").wait_for(timeout=60_000)
    frame.get_by_text("Done: add adds.").wait_for(timeout=60_000)
    deadline = time.monotonic() + 30
    while (vs.workspace / "calc.py").read_text(encoding="utf-8") != FIXED:
        assert time.monotonic() < deadline, "the plan's edit never landed"
        time.sleep(0.1)
    assert offer.count() == 0, "the offer stays after the plan ran"
