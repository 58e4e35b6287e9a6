"""Wire-form benchmark: the cost of `encode_request` per step as the history grows.

A history of N steps (assistant read_file call + its ~1.5 KB result) is encoded the
way the loop does it — once per step, one message pair more each time — with the
incremental encoder (`encode_request`: each stored message mapped and encoded once,
by message id) and with a full re-map of every message (`encode_json(request_body)`,
what every step cost before). Prints the median per-step CPU time (process time, so
other load on the machine does not count) at a few history lengths for both wire
protocols. No network.

    python bench/wire_encode.py              # N = 30, 200, 1000
    python bench/wire_encode.py -n 50        # a short smoke run
"""

from __future__ import annotations

import argparse
import statistics
import time

from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.domain.ports import ModelRequest, ToolSpec
from lsp_agent.providers.chat_completions import ChatCompletionsProvider
from lsp_agent.providers.http_base import HttpStreamingProvider, encode_json
from lsp_agent.providers.responses import ResponsesProvider
from lsp_agent.settings.config import ProviderConfig

RESULT = "\n".join(f"{i:>4}: value_{i} = compute(value_{i - 1}, factor={i % 7})" for i in range(1, 40))


def step_messages(i: int) -> list[Message]:
    call = ToolCallPart(call_id=f"call_{i}", name="read_file", arguments=f'{{"path": "src/file_{i % 8}.py"}}')
    result = ToolResultPart(call_id=f"call_{i}", name="read_file", ok=True, output=RESULT)
    return [Message(role=Role.ASSISTANT, parts=[TextPart(text=f"Reading file {i}."), call]),
            Message(role=Role.TOOL, parts=[result])]


def request(messages: list[Message]) -> ModelRequest:
    tools = [ToolSpec(name="read_file", description="Read a file.",
                      parameters={"type": "object", "properties": {"path": {"type": "string"}}})]
    # Built without re-validating the history (the loop's request holds already-valid messages).
    return ModelRequest.model_construct(model="m", instructions="You are a coding agent. " * 40, tools=tools,
                                        messages=messages, tail=[], reasoning_effort=None)


def measure(provider: HttpStreamingProvider, steps: int, incremental: bool) -> dict[int, float]:
    """Median ms per encode over the last 10 steps before each checkpoint."""
    history = [Message(role=Role.USER, parts=[TextPart(text="Read every file.")])]
    checkpoints = {n for n in (30, 200, 1000) if n <= steps} | {steps}
    samples: list[float] = []
    out: dict[int, float] = {}
    for i in range(1, steps + 1):
        history.extend(step_messages(i))
        req = request(list(history))
        start = time.process_time()
        if incremental:
            provider.encode_request(req)
        else:
            encode_json(provider.request_body(req))  # type: ignore[attr-defined]
        samples.append((time.process_time() - start) * 1000)
        if i in checkpoints:
            out[i] = statistics.median(samples[-10:])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="steps (default 1000)")
    args = parser.parse_args()
    config = ProviderConfig.model_validate({"baseUrl": "http://127.0.0.1:9/v1"})
    print("| wire | encoder | " + " | ".join(f"step {n} ms" for n in sorted({n for n in (30, 200, 1000)
                                                                                if n <= args.n} | {args.n})) + " |")
    for wire, cls in (("chat", ChatCompletionsProvider), ("responses", ResponsesProvider)):
        for incremental in (False, True):
            provider = cls(config, model="m")
            result = measure(provider, args.n, incremental)
            name = "incremental (per-message cache)" if incremental else "full re-map (before)"
            print(f"| {wire} | {name} | " + " | ".join(f"{result[n]:.2f}" for n in sorted(result)) + " |")


if __name__ == "__main__":
    main()
