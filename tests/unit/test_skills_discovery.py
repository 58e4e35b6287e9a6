"""Discovery: promoted and hand-written skills in the instructions (stable order, byte-stable
until the folder changes), read_skill, and the watchfiles refresh."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from lsp_agent.app.toolset import default_tools
from lsp_agent.context.instructions import BASE_INSTRUCTIONS
from lsp_agent.core.tools import FileTracker, ToolContext
from lsp_agent.disk.applier import DiskApplier
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.settings.config import load_settings
from lsp_agent.skills.discovery import SkillIndex, SkillInfo, front_matter, index_for, skills_block
from lsp_agent.skills.read_skill import ReadSkill, ReadSkillArgs
from lsp_agent.skills.watch import SkillWatcher
from tests.helpers import reply, wait_for
from tests.unit.test_skills_kit import run_recorded, visible


def _skill(root: Path, name: str, description: str, body: str = "Do it.\n") -> Path:
    path = root / ".lsp-agent" / "skills" / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}", encoding="utf-8")
    return path


def test_no_skills_folder_adds_nothing_to_the_instructions(tmp_path: Path) -> None:
    assert skills_block(tmp_path) == ""


def test_skills_are_listed_by_name_in_a_stable_order(tmp_path: Path) -> None:
    _skill(tmp_path, "zeta", "Last one")
    _skill(tmp_path, "alpha", '"Quoted: with a colon"')
    _skill(tmp_path, "mid", "Middle")
    block = skills_block(tmp_path)
    assert block.index("- alpha: Quoted: with a colon\n") < block.index("- mid: Middle\n") < block.index("- zeta:")
    assert skills_block(tmp_path) == block  # unchanged folder, identical bytes


def test_a_new_or_changed_skill_is_seen_by_the_next_block(tmp_path: Path) -> None:
    index = SkillIndex(tmp_path)
    assert not index.refresh() or index.skills() == []
    path = _skill(tmp_path, "build-docs", "Build the docs")
    assert index.refresh() and [s.name for s in index.skills()] == ["build-docs"]
    assert not index.refresh()  # nothing changed since
    path.write_text("---\nname: build-docs\ndescription: Build the docs with mkdocs\n---\n", encoding="utf-8")
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse clocks
    assert index.refresh()
    assert index.skills() == [SkillInfo("build-docs", "Build the docs with mkdocs",
                                        ".lsp-agent/skills/build-docs/SKILL.md")]


def test_links_and_odd_entries_are_not_listed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _skill(outside, "sneaky", "From elsewhere")
    _skill(tmp_path / "ws", "real", "A real one")
    skills = tmp_path / "ws" / ".lsp-agent" / "skills"
    (skills / "linked").symlink_to(outside / ".lsp-agent" / "skills" / "sneaky", target_is_directory=True)
    (skills / "Bad_Name").mkdir()
    (skills / "Bad_Name" / "SKILL.md").write_text("---\ndescription: x\n---\n", encoding="utf-8")
    (skills / "no-file").mkdir()
    (skills / "file-link").mkdir()
    (skills / "file-link" / "SKILL.md").symlink_to(outside / ".lsp-agent" / "skills" / "sneaky" / "SKILL.md")
    assert [s.name for s in _refreshed(tmp_path / "ws")] == ["real"]


def _refreshed(root: Path) -> list[SkillInfo]:
    index = SkillIndex(root)
    index.refresh()
    return index.skills()


def test_a_skills_folder_reached_through_a_link_lists_nothing(tmp_path: Path) -> None:
    _skill(tmp_path / "outside", "sneaky", "From elsewhere")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / ".lsp-agent").symlink_to(tmp_path / "outside" / ".lsp-agent", target_is_directory=True)
    assert skills_block(tmp_path / "ws") == ""


def test_front_matter_without_a_closing_line_is_not_front_matter() -> None:
    assert front_matter("---\nname: x\ndescription: y\n") == {}
    assert front_matter("---\nname: x\ndescription: 'it''s'\n---\nbody") == {"name": "x", "description": "it's"}


async def test_read_skill_returns_the_file_and_names_the_skills_when_unknown(tmp_path: Path) -> None:
    _skill(tmp_path, "build-docs", "Build the docs", body="Run mkdocs build.\n")
    settings = load_settings(tmp_path)
    ctx = ToolContext(root=tmp_path, settings=settings, documents=DiskDocuments(tmp_path),
                      applier=DiskApplier(tmp_path), files=FileTracker())
    found = await ReadSkill().run(ReadSkillArgs(name="build-docs"), ctx)
    assert found.ok and found.output.endswith("Run mkdocs build.")
    assert ".lsp-agent/skills/build-docs/SKILL.md" in ctx.files.read_steps
    missing = await ReadSkill().run(ReadSkillArgs(name="nope"), ctx)
    assert not missing.ok and "Skills available: build-docs" in missing.output


def test_read_skill_comes_after_the_default_tools(tmp_path: Path) -> None:
    names = [t.name for t in default_tools(load_settings(tmp_path))]
    assert names.index("read_skill") > names.index("verify_project")
    assert "read_skill" not in [t.name for t in default_tools(load_settings(tmp_path, {"toolProfile": "minimal"}))]


async def test_a_hand_written_skill_appears_in_the_next_request_without_a_restart(tmp_path: Path) -> None:
    provider, _ = await run_recorded(tmp_path, [reply(text="ok")])
    assert provider.requests[0].instructions == BASE_INSTRUCTIONS
    assert [m.text() for m in provider.requests[0].messages] == ["do the task"]
    _skill(tmp_path, "release", "Cut a release")
    provider, _ = await run_recorded(tmp_path, [reply(text="ok")])
    assert provider.requests[0].instructions == BASE_INSTRUCTIONS  # skills never enter the instructions
    assert "- release: Cut a release" in visible(provider.requests[0])


async def test_the_watcher_reports_skills_as_the_folder_appears_and_changes(tmp_path: Path) -> None:
    seen: list[list[str]] = []
    watcher = SkillWatcher(index_for(tmp_path), lambda skills: seen.append([s.name for s in skills]))
    watcher.start()
    try:
        await asyncio.sleep(0.1)
        _skill(tmp_path, "first", "One")  # creates .lsp-agent/skills/first/ from nothing
        await wait_for(lambda: bool(seen) and seen[-1] == ["first"], timeout=30)
        _skill(tmp_path, "second", "Two")
        await wait_for(lambda: seen[-1] == ["first", "second"], timeout=30)
    finally:
        await watcher.stop()
