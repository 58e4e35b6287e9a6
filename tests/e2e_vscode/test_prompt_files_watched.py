"""Custom `/` commands follow their Markdown files while the window is open: with the `/` list open
and no key pressed, a prompt file created in the (trusted) workspace's prompts folder or in the
user's shows up in the list, and a deleted one goes — no reload, no retyping."""

from __future__ import annotations

from pathlib import Path

from tests.e2e_vscode.conftest import TIMEOUT_MS, OpenVSCode
from tests.helpers import reply


def user_prompts(workspace: Path) -> Path:
    """The user's prompts folder of this window: $XDG_CONFIG_HOME/lsp-agent/prompts (the test's own
    XDG_CONFIG_HOME is `<root>/config`, see conftest._isolated_env)."""
    return workspace.parent / "config" / "lsp-agent" / "prompts"


def make_user_prompts(workspace: Path) -> None:
    user_prompts(workspace).mkdir(parents=True, exist_ok=True)


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
    (prompts / "watched.md").write_text("# Check the watched thing\nLook at WATCHED-7c2e.\n", encoding="utf-8")
    picker.locator(".pick", has_text="/watched").filter(has_text="(this workspace)").wait_for(timeout=TIMEOUT_MS)

    # deleted: it leaves the open list
    (prompts / "watched.md").unlink()
    picker.locator(".empty", has_text="no such command").wait_for(timeout=TIMEOUT_MS)

    # the user's own folder, outside the workspace, is watched too
    box.fill("")
    box.press_sequentially("/min")
    picker.locator(".empty", has_text="no such command").wait_for(timeout=TIMEOUT_MS)
    (user_prompts(vs.workspace) / "mine.md").write_text("# My own prompt\nMINE-41d0\n", encoding="utf-8")
    row = picker.locator(".pick", has_text="/mine")
    row.wait_for(timeout=TIMEOUT_MS)
    assert "(this workspace)" not in str(row.inner_text())
