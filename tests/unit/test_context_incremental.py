"""The per-step context work is incremental, so a step costs the same at step 1,000 as at step 10:
the token estimate, the model view and the stale-read scan touch only the messages added since the
last step, and each still equals a count from scratch after appends, folds and compactions."""

from __future__ import annotations

from lsp_agent.context.budget import TokenCounter, message_tokens
from lsp_agent.context.stale import StaleScanner, stale_reads
from lsp_agent.context.view import COMPACTION, ViewCache, model_view
from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.domain.ports import ModelRequest


class CountingCounter(TokenCounter):
    """Counts how many messages were looked at (cache hits included)."""

    def __init__(self) -> None:
        super().__init__()
        self.looked_at = 0

    def message(self, message: Message) -> int:
        self.looked_at += 1
        return super().message(message)


def step(n: int, path: str = "a.py", written: bool = False) -> list[Message]:
    meta = {"written": [path]} if written else {"read": [path]}
    return [Message(role=Role.ASSISTANT, parts=[ToolCallPart(call_id=f"c{n}", name="read_file",
                                                            arguments=f'{{"path": "{path}"}}')]),
            Message(role=Role.TOOL, parts=[ToolResultPart(call_id=f"c{n}", name="read_file", ok=True,
                                                          output=f"line {n}\n" * (n + 1), metadata=meta)])]


def request(messages: list[Message]) -> ModelRequest:
    return ModelRequest(model="m", instructions="i" * 100, tools=[], messages=messages, tail=["t" * 8])


def scratch(messages: list[Message]) -> int:
    return 25 + sum(message_tokens(m) for m in messages) + 2 + 4


def test_an_extended_request_costs_only_its_new_messages_and_equals_a_count_from_scratch() -> None:
    counter = CountingCounter()
    history = [Message(role=Role.USER, parts=[TextPart(text="read them")])]
    for n in range(50):
        history += step(n)
        counter.looked_at = 0
        assert counter.estimate(request(list(history))) == scratch(history)
        assert counter.looked_at == (3 if n == 0 else 2)  # the two new messages only
    counter.looked_at = 0
    assert counter.estimate(request(list(history))) == scratch(history)  # the same request again: free
    assert counter.looked_at == 0


def test_a_folded_copy_and_a_compacted_list_are_counted_anew() -> None:
    counter = TokenCounter()
    history = [m for n in range(10) for m in step(n)]
    assert counter.estimate(request(history)) == scratch(history)
    # A fold replaces a message in the middle by a copy with the same ID and a shorter output.
    result = history[5].tool_results()[0]
    folded = history[5].model_copy(update={"parts": [result.model_copy(update={"output": "[folded]"})]})
    view = [*history[:5], folded, *history[6:]]
    assert counter.estimate(request(view)) == scratch(view) < scratch(history)
    # A compaction: a summary first, then the kept tail.
    summary = Message(role=Role.USER, parts=[TextPart(text="summary " * 20, synthetic=True)])
    compacted = [summary, *history[12:]]
    assert counter.estimate(request(compacted)) == scratch(compacted)
    # And back to a list that extends an earlier one (not the last one counted).
    assert counter.estimate(request([*view, *step(99)])) == scratch([*view, *step(99)])


def test_the_cached_view_equals_the_view_from_scratch_through_folds_and_compactions() -> None:
    cache = ViewCache()
    history: list[Message] = [Message(role=Role.USER, parts=[TextPart(text="go")])]
    folded: dict[str, str] = {}

    def same() -> None:
        expected = model_view(history, folded)
        got = cache.view(history, folded)
        assert [m.model_dump() for m in got] == [m.model_dump() for m in expected]

    for n in range(6):
        history += step(n)
        same()
    first = history[2].tool_results()[0]
    folded[first.id] = "[folded read]"  # a fold adds entries
    same()
    history += step(6)
    same()
    # Folded copies are made once, not per step: the counter's prefix check stays a pointer compare.
    assert all(a is b for a, b in zip(cache.view(history, folded), cache.view(history, folded), strict=True))
    marker = Message(role=Role.USER, parts=[TextPart(text="summary", synthetic=True, metadata={
        COMPACTION: {"keepFrom": history[9].id}})])
    history.append(marker)
    same()
    history += step(7)
    same()
    assert cache.view(history, folded)[0] is marker
    # A history changed other than by appending (or another list) is rebuilt, not extended.
    history[-1] = step(8)[1]
    same()
    other = list(history[:3])
    assert [m.id for m in cache.view(other, {})] == [m.id for m in other]


def test_the_incremental_stale_scan_equals_a_scan_from_scratch() -> None:
    scanner = StaleScanner()
    history: list[Message] = []
    for n in range(12):
        history += step(n, path=f"f{n % 3}.py", written=n % 4 == 3)
        assert stale_reads(history, scanner) == stale_reads(history)
    assert stale_reads(history, scanner)  # some reads went stale on the way
    shorter = history[:5]  # another list: scanned from the start
    assert stale_reads(shorter, scanner) == stale_reads(shorter)
