"""Token accounting: chars/4 (chars/3 for CJK-heavy text), instructions and tool schemas counted,
provider-reported usage preferred, the budget = window minus the output reserve."""

from __future__ import annotations

from pathlib import Path

from lsp_agent.context.budget import Budget, TokenCounter, estimate_text
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from lsp_agent.domain.history import Message, Role, TextPart, Usage
from lsp_agent.domain.ports import ModelRequest, ToolSpec
from lsp_agent.providers.scripted import ScriptedReply
from lsp_agent.settings.config import Settings
from tests.unit.test_context_support import context_env


def test_characters_over_four_and_over_three_for_cjk_heavy_text() -> None:
    assert estimate_text("") == 0
    assert estimate_text("a" * 400) == 100
    assert estimate_text("a" * 401) == 101
    assert estimate_text("修复这个函数的错误并运行测试" * 10) == 140 // 3 + 1  # 140 CJK characters
    assert estimate_text("résumé naïve " * 10) == 130 // 4 + 1  # accents are not CJK


def test_instructions_and_tool_schemas_count() -> None:
    counter = TokenCounter()
    tool = ToolSpec(name="read_file", description="d" * 400, parameters={"type": "object", "properties": {}})
    bare = ModelRequest(model="m", instructions="", tools=[], messages=[])
    full = ModelRequest(model="m", instructions="i" * 800, tools=[tool], messages=[
        Message(role=Role.USER, parts=[TextPart(text="u" * 40)])], tail=["t" * 40])
    assert counter.estimate(bare) == 0
    assert counter.estimate(full) >= 200 + 100 + 10 + 10


def test_provider_usage_calibrates_the_estimate() -> None:
    counter = TokenCounter()
    request = ModelRequest(model="m", instructions="x" * 4000, tools=[], messages=[])
    assert counter.tokens(request) == 1000
    counter.observe(estimated=1000, reported=1500)  # the provider counted more (another tokenizer)
    assert counter.tokens(request) == 1500
    counter.observe(estimated=1000, reported=None)  # no report: the last calibration stays
    assert counter.tokens(request) == 1500


def test_budget_is_the_window_minus_the_output_reserve() -> None:
    settings = Settings.model_validate({"compaction": {"output_reserve_tokens": 8000}})
    assert Budget.of(settings, 128_000).tokens == 120_000
    assert Budget.of(settings, 16_000).tokens == 12_000  # at most a quarter of the window is reserved
    budget = Budget.of(Settings.model_validate({"compaction": {"context_window": 20_000}}), 128_000)
    assert (budget.window, budget.fold_limit, budget.compact_limit) == (20_000, 11_132, 15_108)
    assert Budget.of(Settings(), None).window == 32_768


async def test_each_request_records_its_token_count_and_reported_usage_is_used(tmp_path: Path) -> None:
    replies = [ScriptedReply(text="one", usage=Usage(input=9000, output=1))]
    env, _ = context_env(tmp_path, replies)
    session = AgentSession(env)
    await Generation(session).run("hello")
    (record,) = env.store.events(session.id, "llm.request")
    counter = session.context.counter
    assert record["tokens"] > 2000  # the instructions and tool schemas are most of it
    assert counter.calibration.reported == 9000 and counter.calibration.estimated == record["tokens"]
