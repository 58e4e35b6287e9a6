"""What a step costs must be its new bytes: the cached parts of request building give exactly the bytes
a from-scratch encoding gives, whatever changes between requests, and streaming a request does no
import-system work."""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsp_agent.core.prefix import RequestBytes, prefix_share
from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.domain.ports import ToolSpec
from lsp_agent.providers.http_base import encode_json
from tests.providers.loopback import LoopbackServer, ProviderFactory, Reply, Wire, simple_request, turn


def _tools(*names: str, description: str = "a tool") -> list[ToolSpec]:
    return [ToolSpec(name=n, description=f"{description} {n}", parameters={"type": "object", "properties": {}})
            for n in names]


def _step(i: int) -> list[Message]:
    return [Message(role=Role.ASSISTANT, parts=[ToolCallPart(call_id=f"c{i}", name="read_file",
                                                             arguments=f'{{"path":"f{i}.py"}}')]),
            Message(role=Role.TOOL, parts=[ToolResultPart(call_id=f"c{i}", name="read_file", ok=True,
                                                          output=f"line {i}")])]


@pytest.mark.parametrize("wire", ["chat", "responses"])
async def test_each_body_equals_a_fresh_encoding_whatever_changes_between_requests(
        wire: Wire, make_provider: ProviderFactory) -> None:
    provider = make_provider(wire, "http://127.0.0.1:9/v1")
    tools = _tools("read_file", "apply_patch")
    history = [Message(role=Role.USER, parts=[TextPart(text="go")])]
    changes = [
        {},  # the usual step: only messages appended
        {"tools": _tools("read_file", "apply_patch")},  # equal tools, new objects
        {"tools": _tools("read_file", "apply_patch", description="changed")},
        {"tools": _tools("read_file")},
        {"tools": []},
        {"instructions": "Other instructions."},
        {"instructions": ""},
        {"reasoning_effort": "high"},
        {"tail": ["Reminder."]},
        {"model": "other-model"},
    ]
    for i, change in enumerate(changes):
        history += _step(i)
        request = simple_request(**{"tools": tools, "messages": list(history), **change})
        provider.model = change.get("model", "test-model")
        assert provider.encode_request(request) == encode_json(provider.request_body(request)), change
    compacted = simple_request(tools=tools, messages=history[-3:])  # the list shrank: not an extension
    assert provider.encode_request(compacted) == encode_json(provider.request_body(compacted))


@given(st.lists(st.tuples(st.integers(0, 40), st.binary(max_size=60)), min_size=1, max_size=12))
def test_request_bytes_give_the_share_and_digest_of_every_body(steps: list[tuple[int, bytes]]) -> None:
    tracker, previous, body = RequestBytes(), b"", b""
    for keep, tail in steps:  # each body keeps some of the previous one (or diverges) and adds bytes
        body = body[:keep] + tail
        share, digest = tracker.add(body)
        assert digest == hashlib.sha256(body).hexdigest()
        assert share == prefix_share(previous, body)
        previous = body


class _CountingFinder(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.looked_up: list[str] = []

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        self.looked_up.append(fullname)
        return None  # only counts: the next finders do the work


@pytest.mark.parametrize("wire", ["chat", "responses"])
async def test_streaming_a_request_does_no_import_lookups(wire: Wire, server: LoopbackServer,
                                                          make_provider: ProviderFactory) -> None:
    """httpcore asks `import sniffio` on every request; without sniffio installed that import fails and
    scans sys.path each time (~1 ms a request). Any import in the per-request path shows up here."""
    server.keep_alive = True
    server.fallback = Reply(chunks=[turn(wire, call=("c1", "read_file", {"path": "a.py"}))], chunk_delay=0)
    provider = make_provider(wire, server.url)
    request = simple_request()
    for _ in range(2):  # the first requests may import what they use once
        async for _event in provider.stream(request):
            pass
    finder = _CountingFinder()
    sys.meta_path.insert(0, finder)
    try:
        for _ in range(5):
            async for _event in provider.stream(request):
                pass
    finally:
        sys.meta_path.remove(finder)
    assert finder.looked_up == []
    assert server.connections == 1
