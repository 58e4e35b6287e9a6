"""The contract numbers that were constants are settings: each defaults to its documented value,
and its bounds hold (the bound itself accepted, one past it refused with the setting's name)."""

from __future__ import annotations

import pytest

from lsp_agent.context.recover import PAGE_PARTS, PART_CHARS
from lsp_agent.core.capabilities import CONTEXT_PACK_MAX_TOKENS, ESCALATE_AFTER_FAILURES, PACK_MIN_CONTEXT
from lsp_agent.core.lease import LEASE_S
from lsp_agent.core.queue import MAX_STEER_CHARS
from lsp_agent.core.steering import MAX_PENDING, MAX_RECEIPTS
from lsp_agent.settings.config import ConfigError, Limits, load_settings

#: name -> (documented default, smallest allowed, largest allowed)
BOUNDS = {
    "steer_chars": (16_000, 1, 200_000),
    "steer_pending": (32, 1, 10_000),
    "steer_receipts": (256, 1, 100_000),
    "recover_page_parts": (100, 1, 10_000),
    "recover_part_chars": (16_000, 100, 1_000_000),
    "context_pack_min_context": (64_000, 1000, 100_000_000),
    "context_pack_max_tokens": (2_048, 0, 100_000),
    "escalate_after_failures": (2, 1, 1000),
    "session_lease_s": (30, 3, 3600),
}


def test_defaults_are_the_documented_numbers_and_the_code_constants() -> None:
    limits = Limits()
    assert {name: getattr(limits, name) for name in BOUNDS} == {name: b[0] for name, b in BOUNDS.items()}
    # The constants the code falls back on when no settings are at hand say the same.
    constants = (MAX_STEER_CHARS, MAX_PENDING, MAX_RECEIPTS, PAGE_PARTS, PART_CHARS, PACK_MIN_CONTEXT,
                 CONTEXT_PACK_MAX_TOKENS, ESCALATE_AFTER_FAILURES, LEASE_S)
    assert tuple(b[0] for b in BOUNDS.values()) == constants


@pytest.mark.parametrize("name", list(BOUNDS))
def test_each_bound_is_accepted_and_one_past_it_refused(name: str) -> None:
    _, low, high = BOUNDS[name]
    for value in (low, high):
        assert getattr(load_settings(None, {"limits": {name: value}}).limits, name) == value
    for value, words in ((low - 1, "greater than or equal"), (high + 1, "less than or equal")):
        with pytest.raises(ConfigError) as caught:
            load_settings(None, {"limits": {name: value}})
        assert f"limits.{name}: Input should be {words}" in str(caught.value)


@pytest.mark.parametrize("name", list(BOUNDS))
def test_each_has_a_description(name: str) -> None:
    description = Limits.model_fields[name].description
    assert description and len(description) > 40
