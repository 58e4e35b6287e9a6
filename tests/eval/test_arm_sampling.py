"""Sampling per arm (temperature, seed, output limit) and provider sections named with hyphens:
validated in the manifest, sent by the real agent to a real (loopback) OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from evalkit import PY, attempts

from lsp_agent.eval.executor import LocalExecutor
from lsp_agent.eval.manifest import Manifest, ManifestError, parse_manifest
from lsp_agent.eval.runner import CohortRunner, config_pairs
from lsp_agent.providers.responses import ResponsesProvider
from lsp_agent.settings.config import ProviderConfig, Sampling
from tests.providers.loopback import LoopbackServer, Reply, chat_sse, simple_request

ORACLE = "import pathlib, sys; sys.exit(0 if pathlib.Path(sys.argv[-1], 'target.txt').read_text() == 'ok' else 1)"


def data(arms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "openai-compatible/loop-model", "runtimeRevision": "t", "repetitions": 1, "timeoutMs": 60_000,
            "arms": arms, "tasks": [{"id": "t", "prompt": "Say done.", "files": [{"path": "target.txt",
                                                                                 "content": "todo"}],
                                     "oracle": [PY, "-c", ORACLE]}]}


def problems(arm: dict[str, Any]) -> list[str]:
    raw = json.dumps(data([arm, {"name": "other"}])).encode()
    with pytest.raises(ManifestError) as caught:
        parse_manifest(raw, "m.json", "json")
    return caught.value.problems


@pytest.mark.parametrize(("field", "value"), [
    ("temperature", -0.1), ("temperature", 2.01), ("temperature", "hot"), ("seed", -1), ("seed", 2**63),
    ("seed", 1.5), ("maxOutputTokens", 0), ("maxOutputTokens", 1_000_001)])
def test_sampling_values_outside_their_range_are_refused_naming_the_field(field: str, value: Any) -> None:
    found = problems({"name": "a", field: value})
    assert found and found[0].startswith(f"arms[0].{field}:"), found


def test_sampling_through_config_is_refused_for_the_arms_own_fields() -> None:
    found = problems({"name": "a", "config": {"sampling": {"temperature": 1}}})
    assert "arm's `temperature`" in found[0]


def test_a_provider_section_named_with_a_hyphen_can_be_configured_by_an_arm() -> None:
    arm = {"name": "a", "config": {"providers": {"openai-compatible": {"baseUrl": "http://127.0.0.1:1/v1"}}}}
    manifest = Manifest.model_validate(data([arm, {"name": "b"}]))
    pairs = config_pairs(manifest.arms[0], ".")
    assert 'providers.openai-compatible.baseUrl="http://127.0.0.1:1/v1"' in pairs
    assert problems({"name": "a", "config": {"-leading": 1}})[0].startswith("arms[0].config:")


def test_responses_wire_sends_the_temperature() -> None:
    provider = ResponsesProvider(ProviderConfig.model_validate({"baseUrl": "http://127.0.0.1:1/v1"}), model="m",
                                 sampling=Sampling(temperature=0.3, seed=5, max_output_tokens=77))
    body = provider.request_body(simple_request())
    assert body["temperature"] == 0.3 and body["max_output_tokens"] == 77 and "seed" not in body


async def test_each_arm_sends_its_sampling_to_the_server_and_records_it(tmp_path: Path) -> None:
    server = LoopbackServer()
    await server.start()
    try:
        # The server names the model that answered (a dated snapshot of the one asked for).
        server.fallback = Reply(chunks=[chat_sse([
            {"id": "c1", "model": "loop-model-2026-01-01",
             "choices": [{"index": 0, "delta": {"role": "assistant", "content": "done"}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}])],
            chunk_delay=0)
        provider = {"providers": {"openai-compatible": {"baseUrl": server.url, "maxRetries": 0,
                                                        "discover": False}}}
        arms = [{"name": "cold", "temperature": 0, "seed": 42, "maxOutputTokens": 300, "config": provider},
                {"name": "plain", "config": copy.deepcopy(provider)}]
        out, err = io.StringIO(), io.StringIO()
        runner = CohortRunner(Manifest.model_validate(data(arms)), tmp_path, out, err, LocalExecutor())
        result = await asyncio.wait_for(runner.run(asyncio.Event()), 120)
    finally:
        await server.close()
    assert result.exit_code == 0, err.getvalue()
    bodies = [r.json() for r in server.requests if r.path.endswith("/chat/completions")]
    assert len(bodies) == 2, err.getvalue()
    cold = [b for b in bodies if "temperature" in b]
    plain = [b for b in bodies if "temperature" not in b]
    assert len(cold) == 1 and len(plain) == 1  # the other arm leaves them to the server
    assert cold[0]["temperature"] == 0 and cold[0]["seed"] == 42 and cold[0]["max_tokens"] == 300
    assert "seed" not in plain[0] and plain[0]["max_tokens"] != 300
    records = {r["arm"]: r for r in attempts([json.loads(line) for line in out.getvalue().splitlines()])}
    assert records["cold"]["sampling"] == {"temperature": 0.0, "seed": 42, "maxOutputTokens": 300}
    assert records["plain"]["sampling"] == {"temperature": None, "seed": None, "maxOutputTokens": None}
    assert {r["serverModel"] for r in records.values()} == {"loop-model-2026-01-01"}


@pytest.mark.parametrize(("value", "kept"), [("gpt-4.1-2025-04-14", "gpt-4.1-2025-04-14"), ("", None),
                                             ("x" * 201, None), ("a\nb", None), (42, None), (None, None)])
def test_only_a_plausible_server_model_id_is_kept(value: Any, kept: str | None) -> None:
    from lsp_agent.providers.http_base import server_model

    assert server_model(value) == kept
