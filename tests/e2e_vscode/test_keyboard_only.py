"""The agent with the keyboard alone, in a real VS Code window: after the window opens no click at all.
Ctrl+Alt+A puts the cursor in the agent input; `@` opens the picker, arrows move, Enter chooses, the
choices show as chips; Backspace at the start of the input and Delete on a focused chip remove chips;
the composer's mode and model buttons are reached with Shift+Tab and open VS Code's pickers, operated
with arrows and Enter, and the composer then shows the new mode and model; Enter sends; Escape takes
the cursor to the approval card, Tab and Enter answer it; the transcript's rows are walked with arrows
and j/k, and Enter opens a tool row's output."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e_vscode.conftest import AUTOSAVE, TIMEOUT_MS, OpenVSCode, VSCode
from tests.e2e_vscode.turns_model import Turn, TurnsModel, serve_turns, user_texts

FILES = {"calc.py": "def add(a, b):\n    return a - b\n", "README.md": "# calc\n", "notes.txt": "nothing\n"}
OUTPUT = "KEYBOARD-OUTPUT-7f3a"
TOUCH = f"python3 -c \"open('made.txt', 'w').write('x'); print('{OUTPUT}')\""
DONE = "Finished: made.txt is there."


@pytest.fixture
def turns_model() -> Iterator[TurnsModel]:
    yield from serve_turns([Turn(call=("run_command", {"command": TOUCH})), Turn(text=DONE)])


def focused(frame: Any) -> Any:
    """The element that has the keyboard focus inside the agent view."""
    return frame.locator(":focus")


def wait_until(check: Any, what: str, timeout_s: float = TIMEOUT_MS / 1000) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def press_until(vs: VSCode, key: str, position: Callable[[], str], reached: Callable[[str], bool], what: str,
                most: int = 12) -> None:
    """Press `key` until `reached(position())` — a person tabbing or arrowing to a place. After each
    press the test waits for the position to move (the event itself), so it never presses ahead."""
    current = position()
    for _ in range(most):
        if reached(current):
            return
        vs.page.keyboard.press(key)
        wait_until(lambda before=current: position() != before, f"{key} moved nothing (still at {current!r})")
        current = position()
    assert reached(current), f"{what} (at {current!r})"


def focus_in(frame: Any) -> str:
    """Where the keyboard focus is in the agent view: the element's id, label, row key or text."""
    return str(frame.locator("body").evaluate(
        "() => { const a = document.activeElement; if (!a || a === document.body) return '';"
        " return a.id || a.getAttribute('aria-label') || a.dataset.key || a.textContent.slice(0, 60); }"))


def focus_input(vs: VSCode, frame: Any) -> Any:
    """Ctrl+Alt+A: the agent view comes forward with the cursor in its input."""
    vs.page.keyboard.press("Control+Alt+A")
    box = frame.locator("#input:focus")
    box.wait_for(timeout=TIMEOUT_MS)
    return box


def pick_from_quick_pick(vs: VSCode, label: str) -> None:
    """VS Code's quick pick is open: arrows down to the row with `label`, Enter."""
    rows = vs.page.locator(".quick-input-widget .monaco-list-row")
    rows.filter(has_text=label).first.wait_for(timeout=TIMEOUT_MS)
    focused_row = vs.page.locator(".quick-input-widget .monaco-list-row.focused")

    def row() -> str:
        return str(focused_row.first.inner_text()) if focused_row.count() else ""

    press_until(vs, "ArrowDown", row, lambda text: label in text,
                f"the arrows never reached {label!r} in the quick pick")
    vs.page.keyboard.press("Enter")
    vs.page.locator(".quick-input-widget").wait_for(state="hidden", timeout=TIMEOUT_MS)


def choose_with_button(vs: VSCode, frame: Any, button_id: str, label: str) -> None:
    """From the input, Shift+Tab to the composer's button, Enter opens its picker, arrows + Enter choose."""
    focus_input(vs, frame)
    press_until(vs, "Shift+Tab", lambda: focus_in(frame), lambda at: at == button_id,
                f"Shift+Tab never reached the composer's {button_id} button")
    vs.page.keyboard.press("Enter")
    pick_from_quick_pick(vs, label)


@pytest.mark.parametrize("autosave", AUTOSAVE)
def test_a_task_from_prompt_to_approval_to_reading_its_output_with_the_keyboard_only(
        open_vscode: OpenVSCode, turns_model: TurnsModel, autosave: str) -> None:
    vs = open_vscode(autosave, [], files=FILES, configured=False,
                     settings={"lspAgent.providers": {"loop": {"baseUrl": turns_model.base_url, "maxRetries": 0}},
                               "lspAgent.model": "loop/tiny", "lspAgent.approvalPolicy": "untrusted"})
    keys = vs.page.keyboard
    frame = vs.transcript()
    box = focus_input(vs, frame)
    mode, model = frame.locator("#mode"), frame.locator("#model")
    assert mode.inner_text().startswith("Agent") and model.inner_text().startswith("loop/tiny")

    # `@`, a fuzzy word, the arrows and Enter: three files become chips
    keys.type("make the file @")
    picker = frame.locator("#picker")
    picker.locator(".pick").first.wait_for(timeout=TIMEOUT_MS)
    for word, name in (("clc", "calc.py"), ("readme", "README.md"), ("nots", "notes.txt")):
        if not word.startswith("clc"):
            keys.type(" @")
        keys.type(word)
        first = picker.locator(".pick").first
        first.and_(picker.locator(".pick", has_text=name)).wait_for(timeout=TIMEOUT_MS)
        if picker.locator(".pick").count() > 1:  # the arrows move the choice and back
            keys.press("ArrowDown")
            picker.locator(".pick").nth(1).and_(picker.locator(".pick.active")).wait_for(timeout=TIMEOUT_MS)
            keys.press("ArrowUp")
            first.and_(picker.locator(".pick.active")).wait_for(timeout=TIMEOUT_MS)
        keys.press("Enter")
        frame.locator("#chips .chip", has_text=name).wait_for(timeout=TIMEOUT_MS)
    chips = frame.locator("#chips .chip")
    assert chips.count() == 3
    typed = box.input_value()
    assert typed.startswith("make the file"), typed

    # Backspace at the very start of the input removes the last chip, and nothing of the text
    keys.press("Control+Home")
    keys.press("Backspace")
    wait_until(lambda: chips.count() == 2, "Backspace at the start of the input did not remove the last chip")
    assert frame.locator("#chips .chip", has_text="notes.txt").count() == 0
    assert box.input_value() == typed
    # Shift+Tab reaches the last chip's remove button; Delete removes that chip, the focus stays on a chip
    keys.press("Shift+Tab")
    wait_until(lambda: focused(frame).get_attribute("aria-label") == "Remove README.md",
               "Shift+Tab from the input did not reach the last chip")
    keys.press("Delete")
    wait_until(lambda: chips.count() == 1, "Delete on a focused chip did not remove it")
    assert chips.first.inner_text().startswith("calc.py")
    wait_until(lambda: focused(frame).get_attribute("aria-label") == "Remove calc.py",
               "the focus left the chips after a removal")

    # the mode and the model, each by its composer button and VS Code's picker
    choose_with_button(vs, frame, "mode", "Plan")
    wait_until(lambda: mode.inner_text().startswith("Plan"), "the composer does not show Plan mode")
    choose_with_button(vs, frame, "mode", "Agent")
    wait_until(lambda: mode.inner_text().startswith("Agent"), "the composer does not show Agent mode again")
    choose_with_button(vs, frame, "model", "loop/coder-32b")
    wait_until(lambda: model.inner_text().startswith("loop/coder-32b"), "the composer does not show the new model")
    vs.status("Agent: idle", timeout_ms=60_000)
    if autosave == "off":
        vs.doc_screenshot("vscode-keyboard-composer")

    # Enter sends (the draft and the remaining chip survived the trips to the pickers)
    focus_input(vs, frame)
    assert box.input_value() == typed and chips.count() == 1
    keys.press("End")
    keys.press("Enter")

    # the question arrives while the cursor is in the input: Escape goes to the card, Tab to its first
    # choice ("Allow once"), Enter answers
    card = frame.locator(".entry.approval", has_text="run_command")
    card.wait_for(timeout=60_000)
    assert not (vs.workspace / "made.txt").exists()
    keys.press("Escape")
    wait_until(lambda: card.evaluate("c => document.activeElement === c"), "Escape did not take the focus to the card")
    keys.press("Tab")
    wait_until(lambda: focused(frame).inner_text() == "Allow once", "Tab did not reach Allow once")
    keys.press("Enter")
    frame.get_by_text(DONE).wait_for(timeout=60_000)
    assert (vs.workspace / "made.txt").exists()

    # the request went with the chosen model and the one chip left
    first = turns_model.requests[0]
    assert first["model"] == "coder-32b", first["model"]
    sent = next(u for u in user_texts(first) if "make the file" in u)
    assert "[attachment 1: the file calc.py" in sent and "README.md" not in sent and "notes.txt" not in sent, sent
    frame.locator(".entry.prompt", has_text="attached: calc.py").wait_for(timeout=TIMEOUT_MS)

    # rows: Escape from the input goes to the newest row; k/ArrowUp walk up to the command's row,
    # Enter opens it and its output shows; j walks down again
    focus_input(vs, frame)
    keys.press("Escape")
    tool_row = frame.locator("#entries > details[data-key]", has_text="run_command").first
    tool_key = str(tool_row.get_attribute("data-key"))
    press_until(vs, "k", lambda: focus_in(frame), lambda at: at == tool_key, "k never reached the command's row")
    assert tool_row.get_attribute("open") is None
    keys.press("Enter")
    wait_until(lambda: tool_row.get_attribute("open") is not None, "Enter did not open the row")
    tool_row.get_by_text(OUTPUT).first.wait_for(timeout=TIMEOUT_MS)
    keys.press("j")
    wait_until(lambda: not tool_row.evaluate("r => document.activeElement === r"), "j did not move down")
    keys.press("ArrowUp")
    wait_until(lambda: tool_row.evaluate("r => document.activeElement === r"), "ArrowUp did not move up")
    # the focused row is outlined: a keyboard user sees where they are
    outline = tool_row.evaluate("r => getComputedStyle(r).outlineStyle")
    assert outline not in ("", "none"), outline
