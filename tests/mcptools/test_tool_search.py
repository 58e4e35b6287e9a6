"""mcp_tool_discovery + tool_search: MCP tools are reachable only after a search found them; the
tool list grows by appending (prefix-stable); ranking is BM25 over names and descriptions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.app.session_tools import ToolNameConflict, check_names
from lsp_agent.core.prefix import prefix_share
from lsp_agent.core.tool_registry import ToolRegistry
from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.domain.history import ErrorKind, Message, Role, ToolResultPart
from lsp_agent.mcp.ranking import Document, rank
from lsp_agent.mcp.tool_search import selected_names
from lsp_agent.settings.config import Settings
from tests.helpers import call, reply
from tests.mcptools.conftest import everything_server, fault_server, results, run_mcp, time_server, tool_names

DISCOVERY = {"experimental": {"mcp_tool_discovery": True}}


async def test_mcp_tool_is_reachable_only_after_tool_search_found_it(ws: Path) -> None:
    replies = [reply(call("mcp__time__get_current_time", timezone="Etc/UTC")),
               reply(call("tool_search", query="current time in a timezone")),
               reply(call("mcp__time__get_current_time", timezone="Etc/UTC")),
               reply(text="done")]
    result, session, provider = await run_mcp(ws, replies, {"time": time_server(), "fault": fault_server()},
                                              **DISCOVERY)
    before, search, after = results(session)
    assert before.error_kind is ErrorKind.UNKNOWN_TOOL  # not offered up front
    assert search.ok and search.output.startswith("OK: ")
    schemas = json.loads(search.output.splitlines()[-1])
    assert schemas[0]["name"] == "mcp__time__get_current_time"  # ranked first
    assert len(schemas) <= 5 and {"name", "description", "parameters"} == set(schemas[0])
    assert after.ok and '"timezone": "Etc/UTC"' in after.output
    first, second, third = (tool_names(provider, i) for i in range(3))
    assert "tool_search" in first and not any(n.startswith("mcp__") for n in first)
    assert second == first  # the search result's step: nothing callable yet
    # From the next request on, the found tools are appended: the earlier list is a prefix.
    assert third[: len(first)] == first and third[len(first)] == "mcp__time__get_current_time"
    assert set(third[len(first):]) == set(search.metadata["selected"])
    bodies = [provider.encode_request(r) for r in provider.requests]
    assert prefix_share(bodies[1], bodies[2]) > 0.5
    assert result.stop_reason.value == "final"


async def test_selection_holds_for_later_generations_of_the_session(ws: Path) -> None:
    from lsp_agent.core.loop import Generation
    from lsp_agent.core.session import AgentSession
    from tests.mcptools.conftest import mcp_env

    replies = [reply(call("tool_search", query="echo text back")), reply(text="found"),
               reply(call("mcp__fault__echo", text="later")), reply(text="done")]
    env, provider = mcp_env(ws, replies, {"fault": fault_server()}, **DISCOVERY)
    session = AgentSession(env)
    try:
        await Generation(session).run("find it")
        await Generation(session).run("use it")
    finally:
        assert env.mcp is not None
        await env.mcp.aclose()
    assert results(session)[-1].output == "OK: mcp__fault__echo returned 1 content block\nlater"
    assert tool_names(provider, 3)[: len(tool_names(provider, 0))] == tool_names(provider, 0)


async def test_everything_server_from_npm_is_found_by_words_not_by_substring(ws: Path) -> None:
    replies = [reply(call("tool_search", query="add two numbers together", limit=1)),
               reply(call("mcp__everything__get-sum", a=2, b=40)),
               reply(call("mcp__everything__get-tiny-image")),
               reply(call("tool_search", query="a small picture image", limit=1)),
               reply(call("mcp__everything__get-tiny-image")), reply(text="done")]
    _, session, _ = await run_mcp(ws, replies, {"everything": everything_server()}, **DISCOVERY)
    search, total, not_yet, search2, image = results(session)
    assert json.loads(search.output.splitlines()[-1])[0]["name"] == "mcp__everything__get-sum"
    assert total.ok and "42" in total.output
    assert not_yet.error_kind is ErrorKind.UNKNOWN_TOOL  # not found by the first search: not reachable
    assert search2.metadata["selected"] == ["mcp__everything__get-tiny-image"]
    assert image.ok and "[image omitted: image/png" in image.output


def test_tool_search_is_read_only_and_a_pre_existing_tool_named_tool_search_is_an_error() -> None:
    class Impostor(Tool[StrictArgs]):
        name = "tool_search"
        access = Access.READ
        args_model = StrictArgs
        summary = use_when = avoid_when = "x"

        async def run(self, args: StrictArgs, ctx: ToolContext) -> ToolResult:
            return ToolResult.success("x")

    registry = ToolRegistry([Impostor()])
    check_names(registry, discovery=False)
    with pytest.raises(ToolNameConflict, match="tool_search"):
        check_names(registry, discovery=True)


def _docs() -> list[Document]:
    return [Document("mcp__time__get_current_time", "get_current_time", "Get current time in a specific timezone"),
            Document("mcp__time__convert_time", "convert_time", "Convert time between timezones"),
            Document("mcp__git__git_log", "git_log", "Shows the commit logs"),
            Document("mcp__db__query", "query", "Run a read-only SQL query against the database"),
            Document("mcp__db__list_tables", "list_tables", "List the tables of the database"),
            Document("mcp__web__fetch", "fetch", "Fetch a URL and return its content as markdown"),
            Document("mcp__web__search", "search", "Search the web"),
            ]


def test_bm25_ranks_by_words_stems_and_rarity_with_stable_ties() -> None:
    docs = _docs()
    assert rank("timezones", docs, 5)[0][0].key == "mcp__time__convert_time"  # stem: timezone(s)
    assert rank("database tables", docs, 5)[0][0].key == "mcp__db__list_tables"
    assert rank("commits history", docs, 5)[0][0].key == "mcp__git__git_log"
    assert rank("zebra", docs, 5) == []
    assert len(rank("the time database web search", docs, 5)) == 5  # at most the limit
    # camelCase and separators split: "getCurrentTime" finds get_current_time.
    assert rank("getCurrentTime", docs, 1)[0][0].key == "mcp__time__get_current_time"
    same = [Document("b", "alpha", "x"), Document("a", "alpha", "x")]
    assert [d.key for d, _ in rank("alpha", same, 2)] == ["a", "b"]


def _search_part(names: list[str]) -> Message:
    return Message(role=Role.TOOL, parts=[ToolResultPart(call_id="c", name="tool_search", ok=True, output="OK: x",
                                                         metadata={"selected": names})])


def test_selection_is_ordered_unique_and_capped_at_the_limit() -> None:
    limit = Settings().limits.tool_search_selected
    assert limit == 32
    history = [_search_part([f"t{i}" for i in range(20)]), _search_part(["t3", *[f"u{i}" for i in range(13)]])]
    chosen = selected_names(history, limit)
    assert len(chosen) == 32 and chosen[:3] == ["t0", "t1", "t2"] and chosen[-1] == "u11"
    assert len(selected_names(history, 33)) == 33


async def test_tool_search_returns_at_most_five_and_stops_selecting_past_the_cap(ws: Path) -> None:
    from lsp_agent.mcp.tool_search import ToolSearch, ToolSearchArgs

    class Fake:
        def __init__(self, i: int) -> None:
            self.name = f"mcp__s__tool{i}"
            self.description = f"a tool that does thing number {i}"
            self.input_schema: dict[str, Any] = {"type": "object"}
            self.info = type("I", (), {"name": f"tool{i}", "server": "s"})()

    catalog: list[Any] = [Fake(i) for i in range(8)]
    settings = Settings()
    ctx: Any = type("C", (), {"settings": settings})()
    found = await ToolSearch(catalog, []).run(ToolSearchArgs(query="tool thing"), ctx)
    assert len(json.loads(found.output.splitlines()[-1])) == 5 and len(found.metadata["selected"]) == 5
    with pytest.raises(ValueError):
        ToolSearchArgs.model_validate({"query": "x", "limit": 6})
    nearly_full = [f"other{i}" for i in range(31)]
    capped = await ToolSearch(catalog, nearly_full).run(ToolSearchArgs(query="tool thing"), ctx)
    assert len(capped.metadata["selected"]) == 1 and "[NOTE] the session already has 32 selected tools" in \
        capped.output


