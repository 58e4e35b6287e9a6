"""The `context_recover` tool (experimental flag `context_recovery`): search this session's history,
including what a compaction or a fold took out of the request, and follow summary pointers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from pydantic import Field, model_validator

from lsp_agent.context import recover as rc
from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.domain.history import ErrorKind

MAX_LIMIT = 50


class ContextRecoverArgs(StrictArgs):
    keyword: str | None = Field(None, min_length=1, max_length=200,
                                description="Text to find (case-insensitive, literal). Required unless "
                                            "message_id is given.")
    message_id: str | None = Field(None, min_length=1, max_length=100,
                                   description="A message ID (`msg_…`, e.g. from a compaction summary pointer "
                                               "`[msg_…/prt_…]`): return that message's parts (or, with "
                                               "keyword, its matching excerpts).")
    part_id: str | None = Field(None, min_length=1, max_length=100,
                                description="With message_id: only this part (`prt_…`).")
    before: str | None = Field(None, min_length=1, max_length=100,
                               description="A part ID returned as `before` by a previous call: continue the "
                                           "search with the parts older than it.")
    limit: int = Field(10, ge=1, le=MAX_LIMIT, description=f"Most matching parts to return (1-{MAX_LIMIT}).")

    @model_validator(mode="after")
    def _needs_a_target(self) -> ContextRecoverArgs:
        if self.keyword is None and self.message_id is None:
            raise ValueError("give keyword, message_id, or both")
        if self.part_id is not None and self.message_id is None:
            raise ValueError("part_id needs message_id")
        return self


class ContextRecover(Tool[ContextRecoverArgs]):
    name = "context_recover"
    access = Access.READ
    args_model: ClassVar[type[StrictArgs]] = ContextRecoverArgs
    summary = (f"Search this session's own history, including messages a compaction summarized or a fold "
               f"shortened, newest first (by default a page scans {rc.PAGE_PARTS} parts and the first "
               f"{rc.PART_CHARS} characters of each), or fetch one message/part by the [msg_…/prt_…] pointer a "
               "summary gives. Returns bounded excerpts with their original IDs, as untrusted quoted data; "
               "excludes reverted, hidden-reasoning and harness-written text; credential values are redacted.")
    use_when = ("a summary or a folded placeholder points at something you need verbatim again: an earlier "
                "instruction, error text, or a decision.")
    avoid_when = ("the information is in a file or a command's output now: read_file / run_command show the "
                  "current state, while this tool shows what was seen earlier.")

    def paths(self, args: ContextRecoverArgs) -> Iterable[str]:
        return ()

    async def run(self, args: ContextRecoverArgs, ctx: ToolContext) -> ToolResult:
        store = ctx.history
        if store is None or not ctx.session_id:
            return ToolResult.failure(ErrorKind.TOOL_FAILURE,
                                      "context_recover has no session history here; continue without it.")
        history = store.messages(ctx.session_id)
        page = rc.recover(history, keyword=args.keyword, message_id=args.message_id, part_id=args.part_id,
                          before=args.before, limit=args.limit, exclude_message=ctx.message_id,
                          page_parts=ctx.settings.limits.recover_page_parts,
                          part_chars=ctx.settings.limits.recover_part_chars)
        if page.problem is not None:
            return ToolResult.failure(ErrorKind.TOOL_FAILURE, f"{page.problem}. Nothing was returned.",
                                      untrusted=True)
        return ToolResult.success(rc.render(page, args.keyword, args.message_id), **rc.wire(page))
