"""Custom `/` commands follow their Markdown files while the window is open: with the `/` list open
and no key pressed, a prompt file created in the (trusted) workspace's prompts folder or in the
user's shows up in the list, and a deleted one goes — no reload, no retyping."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.e2e_vscode.conftest import TIMEOUT_MS, OpenVSCode
from tests.helpers import reply


def user_prompts(workspace: Path) -> Path:
    """The user's prompts folder of this window: $XDG_CONFIG_HOME/lsp-agent/prompts (the test's own
    XDG_CONFIG_HOME is `<root>/config`, see conftest._isolated_env)."""
    return workspace.parent / "config" / "lsp-agent" / "prompts"


def make_user_prompts(workspace: Path) -> None:
    user_prompts(workspace).mkdir(parents=True, exist_ok=True)


def write_until_listed(path: Path, text: str, row: Any) -> None:
    """Write the file, and write it again while the row has not appeared: the file watcher the
    extension asked for starts in the editor's file service a moment later than the `/` list opens
    (on a loaded machine, seconds), and a file created in a brand-new folder before that start can
    be missed by it. Each write is still a change while the window is open — no reload, no
    retyping — and a watcher that never reports anything fails as before."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000 * 2
    while True:
        path.write_text(text, encoding="utf-8")
        try:
            row.wait_for(timeout=3000)
            return
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise


def test_a_prompt_file_created_or_deleted_while_the_window_is_open_changes_the_slash_list(
        open_vscode: OpenVSCode) -> None:
    vs = open_vscode("off", [reply(text="ok")], prepare=make_user_prompts)
    frame = vs.show_transcript()
    box = frame.locator("#input")
    box.click()
    picker = frame.locator("#picker")

    # the list is open on "/wat": nothing matches yet
    box.press_sequentially("/wat")
    picker.locator(".empty", has_text="no such command").wait_for(timeout=TIMEOUT_MS)
    prompts = vs.workspace / ".lsp-agent" / "prompts"  # a folder that did not exist when the window opened
    prompts.mkdir()
    write_until_listed(prompts / "watched.md", "# Check the watched thing\nLook at WATCHED-7c2e.\n",
                       picker.locator(".pick", has_text="/watched").filter(has_text="(this workspace)"))

    # deleted: it leaves the open list
    (prompts / "watched.md").unlink()
    picker.locator(".empty", has_text="no such command").wait_for(timeout=TIMEOUT_MS)

    # the user's own folder, outside the workspace, is watched too
    box.fill("")
    box.press_sequentially("/min")
    picker.locator(".empty", has_text="no such command").wait_for(timeout=TIMEOUT_MS)
    row = picker.locator(".pick", has_text="/mine")
    write_until_listed(user_prompts(vs.workspace) / "mine.md", "# My own prompt\nMINE-41d0\n", row)
    assert "(this workspace)" not in str(row.inner_text())
