"""A symbol through the `@` picker in a real VS Code window: the TypeScript server that ships with
VS Code answers the workspace symbol query for a function in a .ts file of the workspace; the user
chooses it, it shows as a chip, and the model's request carries it as an attachment naming the
symbol, its kind, its file and line, as the transcript's context line says."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.e2e_vscode.conftest import TIMEOUT_MS, OpenVSCode
from tests.e2e_vscode.turns_model import Turn, TurnsModel, serve_turns, user_texts

SHAPES = ("export interface Shape {\n  area(): number;\n}\n\n"
          "export function computeTotalArea(shapes: Shape[]): number {\n"
          "  return shapes.reduce((sum, s) => sum + s.area(), 0);\n}\n")
ANSWER = "It sums the areas."


@pytest.fixture
def turns_model() -> Iterator[TurnsModel]:
    yield from serve_turns([Turn(text=ANSWER)])


def test_a_workspace_symbol_chosen_with_at_reaches_the_model(open_vscode: OpenVSCode, turns_model: TurnsModel) -> None:
    vs = open_vscode("off", [], files={"shapes.ts": SHAPES}, configured=False,
                     settings={"lspAgent.providers": {"loop": {"baseUrl": turns_model.base_url, "maxRetries": 0}},
                               "lspAgent.model": "loop/tiny"})
    vs.open_file("shapes.ts")  # the TypeScript server starts for the open file's project
    frame = vs.show_transcript()
    box = frame.locator("#input")
    box.click()
    box.press_sequentially("what does @computeTotal")
    picker = frame.locator("#picker")
    symbol = picker.locator(".pick[data-kind='symbol']", has_text="computeTotalArea")
    # The TypeScript server may still be loading the project when the first query comes: the picker
    # then has no symbols yet, and a person types on. Each keystroke asks again (at most a minute).
    for attempt in range(60):
        try:
            symbol.wait_for(timeout=1000)
            break
        except Exception:
            if attempt == 59:
                raise
            box.press("Backspace")
            box.press_sequentially("l")
    assert "shapes.ts:5" in str(symbol.inner_text())
    for _ in range(20):  # down to the symbol's row (files and editors come first)
        if symbol.evaluate("e => e.classList.contains('active')"):
            break
        box.press("ArrowDown")
    box.press("Enter")
    chip = frame.locator("#chips .chip[data-kind='symbol']")
    chip.wait_for(timeout=TIMEOUT_MS)
    # the name as the TypeScript server gives it (it writes a function as `computeTotalArea()`)
    assert re.match(r"computeTotalArea(\(\))? \(shapes\.ts:5\)", str(chip.inner_text())), chip.inner_text()
    box.press("Enter")

    frame.get_by_text(ANSWER).wait_for(timeout=60_000)
    sent = next(u for u in user_texts(turns_model.requests[0]) if "what does" in u)
    assert re.search(r"\[attachment 1: symbol computeTotalArea(\(\))?\]", sent), sent
    assert re.search(r"Function computeTotalArea(\(\))?, defined in shapes\.ts at line 5", sent), sent
    # the prompt's context line names what went with it, as the server recorded it
    frame.locator(".entry.prompt", has_text="attached: symbol computeTotalArea").wait_for(timeout=TIMEOUT_MS)
