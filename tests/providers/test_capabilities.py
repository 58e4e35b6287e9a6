"""Capability resolution: the context-pack rule, effort escalation, request hashes."""

from __future__ import annotations

import json

import pytest

from lsp_agent.core.capabilities import (
    CONTEXT_PACK,
    CONTEXT_PACK_MAX_TOKENS,
    context_pack_decision,
    estimate_tokens,
    request_hashes,
    resolve_capabilities,
)
from lsp_agent.providers.registry import resolve_model
from lsp_agent.settings.config import ModelInfo, Settings


def info(context_window: int | None = None, reasoning: bool | None = None, tools: bool | None = None,
         efforts: list[str] | None = None) -> ModelInfo:
    return ModelInfo.model_validate({"context_window": context_window, "reasoning": reasoning,
                                     "tools": tools, "efforts": efforts or []})


GPT5_EFFORTS = ["minimal", "low", "medium", "high"]


# --- context pack ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("window", "expected"), [(63_999, False), (64_000, True), (400_000, True)])
def test_pack_needs_at_least_64000_tokens_of_context(window: int, expected: bool) -> None:
    pack, reason = context_pack_decision(info(window, True, True), known=False)
    assert pack is expected
    if not expected:
        assert "63999 < 64000" in reason


def test_known_models_use_registry_facts() -> None:
    gpt5 = resolve_model(Settings(), "openai/gpt-5")
    gpt41 = resolve_model(Settings(), "openai/gpt-4.1")
    qwen3 = resolve_model(Settings(), "ollama/qwen3")
    assert context_pack_decision(gpt5.info, gpt5.known)[0] is True
    assert context_pack_decision(gpt41.info, gpt41.known)[0] is False  # no reasoning
    assert context_pack_decision(qwen3.info, qwen3.known)[0] is False  # 40,960 tokens


@pytest.mark.parametrize("missing", ["reasoning", "tools"])
def test_unknown_models_must_declare_all_three(missing: str) -> None:
    model = info(128_000, reasoning=None if missing == "reasoning" else True,
                 tools=None if missing == "tools" else True)
    pack, reason = context_pack_decision(model, known=False)
    assert pack is False
    assert "not declared" in reason and missing in reason


def test_unknown_model_with_only_the_default_window_gets_no_pack() -> None:
    resolved = resolve_model(Settings.model_validate({"models": {"my-model": {"reasoning": True, "tools": True}}}),
                             "local/my-model")
    assert not resolved.known
    assert context_pack_decision(resolved.info, resolved.known)[0] is False


def test_an_explicit_negative_declaration_blocks_a_known_model() -> None:
    s = Settings.model_validate({"models": {"openai/gpt-5": {"tools": False}}})
    resolved = resolve_model(s, "openai/gpt-5")
    pack, reason = context_pack_decision(resolved.info, resolved.known)
    assert pack is False
    assert "tools" in reason


def test_negative_declaration_blocks_even_with_everything_else_declared() -> None:
    assert context_pack_decision(info(200_000, False, True), known=False)[0] is False


def test_the_pack_fits_its_token_budget() -> None:
    assert estimate_tokens(CONTEXT_PACK) <= CONTEXT_PACK_MAX_TOKENS
    assert "verify_project" in CONTEXT_PACK
    assert "Read" in CONTEXT_PACK


# --- effort ---------------------------------------------------------------------------------------


def test_no_failures_and_no_effort_sends_none_and_says_why() -> None:
    res = resolve_capabilities(info(400_000, True, True, GPT5_EFFORTS), True, 0, None, None)
    assert res.reasoning_effort is None
    assert res.reason_none is not None


def test_one_failure_keeps_the_configured_effort() -> None:
    res = resolve_capabilities(info(400_000, True, True, GPT5_EFFORTS), True, 1, None, "low")
    assert (res.reasoning_effort, res.effort_source) == ("low", "settings")


def test_two_consecutive_failures_raise_effort_from_the_default_to_high() -> None:
    res = resolve_capabilities(info(400_000, True, True, GPT5_EFFORTS), True, 2, None, None)
    assert (res.reasoning_effort, res.effort_source) == ("high", "escalated")
    assert res.consecutive_tool_failures == 2


def test_escalation_goes_one_level_up_from_the_configured_effort() -> None:
    model = info(400_000, True, True, GPT5_EFFORTS)
    assert resolve_capabilities(model, True, 2, None, "low").reasoning_effort == "medium"
    assert resolve_capabilities(model, True, 3, None, "high").reasoning_effort == "high"


def test_a_success_resets_the_count_and_the_effort_returns() -> None:
    model = info(400_000, True, True, GPT5_EFFORTS)
    assert resolve_capabilities(model, True, 2, None, "medium").reasoning_effort == "high"
    # The caller resets its count after a successful tool result.
    res = resolve_capabilities(model, True, 0, None, "medium")
    assert (res.reasoning_effort, res.effort_source) == ("medium", "settings")


def test_explicit_user_effort_wins_over_escalation() -> None:
    res = resolve_capabilities(info(400_000, True, True, GPT5_EFFORTS), True, 5, "low", "medium")
    assert (res.reasoning_effort, res.effort_source) == ("low", "user")


def test_models_without_effort_levels_get_no_escalation() -> None:
    res = resolve_capabilities(info(1_047_576, False, True), True, 4, None, "medium")
    assert res.reasoning_effort is None
    assert res.reason_none == "model has no effort levels"


def test_resolution_serialises_with_wire_names() -> None:
    res = resolve_capabilities(info(400_000, True, True, GPT5_EFFORTS), True, 2, None, None,
                               protocol="responses")
    wire = res.wire()
    assert wire["protocol"] == "responses"
    assert wire["contextWindow"] == 400_000
    assert wire["contextPack"] is True
    assert wire["consecutiveToolFailures"] == 2
    assert wire["reasoningEffort"] == "high"
    assert "reasonNone" not in wire


# --- hashes ---------------------------------------------------------------------------------------


def test_request_hashes_cover_body_instructions_and_tools_without_content() -> None:
    tools = [{"type": "function", "name": "a"}, {"type": "function", "name": "b"}]
    chat = json.dumps({"model": "m", "tools": tools,
                       "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]})
    responses = json.dumps({"model": "m", "instructions": "Be brief.", "tools": tools, "input": []})
    reordered = json.dumps({"model": "m", "instructions": "Be brief.", "tools": tools[::-1], "input": []})

    h_chat, h_resp, h_reord = (request_hashes(b.encode()) for b in (chat, responses, reordered))

    assert set(h_chat) == {"bodySha256", "instructionsSha256", "toolsSha256"}
    assert h_chat == request_hashes(chat.encode())
    assert h_chat["instructionsSha256"] == h_resp["instructionsSha256"]
    assert h_chat["toolsSha256"] == h_resp["toolsSha256"]
    assert h_resp["toolsSha256"] != h_reord["toolsSha256"]
    assert h_chat["bodySha256"] != h_resp["bodySha256"]
    assert all(len(v) == 64 and "brief" not in v for v in h_chat.values())
