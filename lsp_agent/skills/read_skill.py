"""read_skill: the SKILL.md of a listed skill, by name (the tool belongs with the skills it reads).

Skills live in `.lsp-agent/skills/NAME/SKILL.md` (promoted from verified work, or written by hand).
The file is read without following links; the result is bounded by `limits.result_chars`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from pydantic import Field

from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.domain.history import ErrorKind
from lsp_agent.domain.skill_rules import MAX_NAME_CHARS, NAME_PATTERN, RuleFailed
from lsp_agent.skills.discovery import index_for, read_skill_text
from lsp_agent.skills.files import SKILLS_REL, skill_rel


class ReadSkillArgs(StrictArgs):
    name: str = Field(
        min_length=1, max_length=MAX_NAME_CHARS, pattern=NAME_PATTERN,
        description="The skill's name exactly as listed in the Skills note of this conversation: lowercase letters, "
                    f"digits and hyphens, at most {MAX_NAME_CHARS} characters, e.g. 'run-migrations'.",
    )


class ReadSkill(Tool[ReadSkillArgs]):
    name = "read_skill"
    access = Access.READ
    args_model = ReadSkillArgs
    summary = (
        f"Return the full SKILL.md of one skill from {SKILLS_REL}/: when it applies and the procedure to "
        "follow, verified in this repository. The skills are listed (name: description) in a Skills note "
        "from lsp-agent in this conversation; when none is there, there are none."
    )
    use_when = "the task matches a listed skill's description: read it before you start and follow its procedure."
    avoid_when = "no listed skill matches the task, or you already read it in this session (its text is above)."

    def paths(self, args: ReadSkillArgs) -> Iterable[str]:
        return ()  # the name is not a path: it is checked against the pattern and the skills found

    async def run(self, args: ReadSkillArgs, ctx: ToolContext) -> ToolResult:
        index = index_for(ctx.root)
        await asyncio.to_thread(index.refresh)
        if index.find(args.name) is None:
            names = ", ".join(s.name for s in index.skills()[:30]) or "none"
            return ToolResult.failure(ErrorKind.TOOL_FAILURE, f"ERROR: there is no skill named {args.name!r}. "
                                                              f"Skills available: {names}. Use one of these names "
                                                              "exactly, or continue without a skill.")
        rel = skill_rel(args.name)
        limit = max(ctx.settings.limits.result_chars - 400, 200)
        try:
            found = await asyncio.to_thread(read_skill_text, ctx.root, args.name, limit)
        except (RuleFailed, OSError) as exc:
            return ToolResult.failure(ErrorKind.TOOL_FAILURE, f"ERROR: {rel} cannot be read ({exc}). Continue "
                                                              "without this skill.")
        if found is None:
            return ToolResult.failure(ErrorKind.TOOL_FAILURE, f"ERROR: {rel} is gone (the skill was retired). "
                                                              "Continue without it.")
        text, cut = found
        note = f"\n[TRUNCATED] {rel} is longer; read the rest with read_file." if cut else ""
        ctx.files.note_read(rel, ctx.step)
        return ToolResult.success(f"OK: skill {args.name} ({rel})\n{text.rstrip()}{note}", read=[rel])
