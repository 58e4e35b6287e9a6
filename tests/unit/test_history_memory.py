"""What one stored step costs in memory (it adds up to the peak RSS of a 1,000-step run), and that history
records behave as before while sharing their "fields set".

A step of the loop stores an assistant message with a tool call and a tool message with its result.
pydantic kept a set of the explicitly set fields in every instance (216 bytes; 728 for a tool result's
seven fields): 1.4 KB of a step's 3.4 KB. History records now share one set of all field names per
class; the budget below fails if each instance gets its own set again.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from lsp_agent.context.budget import TokenCounter, message_tokens
from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.store.db import CACHE_KIB, Store

#: bytes one stored step may retain (2.0 KB measured on CPython 3.11; 3.4 KB with a set per instance)
STEP_BUDGET = 2_600
STEPS = 500


def step(i: int) -> list[Message]:
    call = ToolCallPart(call_id=f"call_{i}", name="read_file",
                        arguments=f'{{"path":"src/mod{i % 8}.py","start_line":3,"end_line":4}}')
    result = ToolResultPart(call_id=call.call_id, name=call.name, ok=True, output=f"OK: src/mod{i % 8}.py\n3: x",
                            error_kind=None, metadata={"read": [f"src/mod{i % 8}.py"], "lines": 8},
                            elapsed_ms=1)
    return [Message(role=Role.ASSISTANT, parts=[call], generation="g", step=i),
            Message(role=Role.TOOL, parts=[result], generation="g", step=i)]


def test_a_stored_step_retains_at_most_its_budget() -> None:
    step(0)  # validators, caches: built before measuring
    tracemalloc.start()
    try:
        history = [m for i in range(1000, 1000 + STEPS) for m in step(i)]
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(history) == 2 * STEPS
    assert retained / STEPS <= STEP_BUDGET, f"{retained / STEPS:.0f} bytes per stored step"


def test_records_share_one_fields_set_per_class_and_behave_as_before() -> None:
    first, second = step(1), step(2)
    assert first[0].model_fields_set is second[0].model_fields_set
    assert first[1].parts[0].model_fields_set is second[1].parts[0].model_fields_set
    assert first[1].parts[0].model_fields_set == set(ToolResultPart.model_fields)

    result = first[1].parts[0]
    assert isinstance(result, ToolResultPart)
    shared = set(result.model_fields_set)
    result.output = "changed"  # assignment adds a field name the shared set already holds
    assert result.output == "changed" and result.model_fields_set == shared
    assert second[1].parts[0].model_fields_set == shared

    folded = result.model_copy(update={"output": "[folded]"})  # a copy gets a set of its own
    assert folded.output == "[folded]" and result.output == "changed"
    assert folded.model_fields_set is not result.model_fields_set

    for message in [*first, Message(role=Role.USER, parts=[TextPart(text="hi", synthetic=True)])]:
        assert Message.model_validate_json(message.model_dump_json()) == message
        assert Message.model_validate(message.model_dump()) == message


def test_the_store_page_cache_is_small(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.db")
    try:
        assert store.db.execute("PRAGMA cache_size").fetchone()[0] == -CACHE_KIB
    finally:
        store.close()


def test_the_token_counter_keeps_nothing_per_ascii_message_and_counts_the_same() -> None:
    """ASCII text is estimated from its length (as cheap as a cache key): only messages with other text,
    which cost a regex scan, are kept; the estimate is the same either way."""
    counter = TokenCounter()
    ascii_steps = [m for i in range(50) for m in step(i)]
    wide = Message(role=Role.TOOL, parts=[ToolResultPart(call_id="c", name="read_file", ok=True,
                                                         output="注释 " * 40 + "done")])
    messages = [*ascii_steps, wide]
    assert counter.messages(messages) == sum(message_tokens(m) for m in messages)
    assert list(counter._messages) == [(wide.id, len(wide.parts[0].output) * 64 + 1)]  # type: ignore[union-attr]
    folded = wide.model_copy(update={"parts": [wide.parts[0].model_copy(update={"output": "[folded]"})]})
    assert counter.messages([*ascii_steps, folded]) == sum(message_tokens(m) for m in [*ascii_steps, folded])
