"""The project instruction files' reader and the note that announces them, in-process."""

from __future__ import annotations

import os
from pathlib import Path

from lsp_agent.context.project_instructions import CUT_MARK, read_project_instructions
from lsp_agent.core.announce import INSTRUCTIONS, SkillsSeen, instructions_note
from lsp_agent.domain.history import Message, Role


def test_the_most_specific_file_gets_its_share_first_and_order_is_precedence(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("A" * 5_000)
    (tmp_path / ".lsp-agent").mkdir()
    (tmp_path / ".lsp-agent" / "instructions.md").write_text("own rule\n")
    found = read_project_instructions(tmp_path, 1_000)
    assert [f.name for f in found.files] == ["AGENTS.md", ".lsp-agent/instructions.md"]
    agents, own = found.files
    assert not own.cut and own.text == "own rule\n"
    assert agents.cut and CUT_MARK in agents.text and agents.size == 5_000
    assert len(agents.text.split(CUT_MARK)[0].rstrip("\n")) == 1_000 - len("own rule\n")


def test_a_cut_never_splits_a_character(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("é" * 100, encoding="utf-8")
    text = read_project_instructions(tmp_path, 11).files[0].text
    assert text.startswith("é" * 5 + "\n" + CUT_MARK) and "\ufffd" not in text


def test_special_and_empty_files_are_skipped(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "AGENTS.md")
    (tmp_path / ".lsp-agent").mkdir()
    (tmp_path / ".lsp-agent" / "instructions.md").write_text("")
    found = read_project_instructions(tmp_path, 1_000)
    assert found.files == [] and found.block() == ""
    assert found.problems == ["AGENTS.md is a FIFO, not a regular file; it was not read"]


def test_the_note_is_sent_once_then_only_on_a_change(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("- rule one\n")
    seen = SkillsSeen(INSTRUCTIONS)
    first = instructions_note([], read_project_instructions(tmp_path, 1_000), [], seen)
    assert first is not None and "rule one" in first.text and first.synthetic
    view = [Message(role=Role.USER, parts=[first])]
    assert instructions_note(view, read_project_instructions(tmp_path, 1_000), [], seen) is None
    (tmp_path / "AGENTS.md").write_text("- rule two\n")
    changed = instructions_note(view, read_project_instructions(tmp_path, 1_000), [], seen)
    assert changed is not None and "changed" in changed.text and "rule two" in changed.text
    (tmp_path / "AGENTS.md").unlink()
    removed = instructions_note([*view, Message(role=Role.USER, parts=[changed])],
                                read_project_instructions(tmp_path, 1_000), [], seen)
    assert removed is not None and "removed" in removed.text
