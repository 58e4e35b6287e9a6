"""instructionProfile = "compact": short instructions and tool specs for small local models. The
compact specs keep every name, type and requirement (the controller checks the same schema), and
the replay record's tool hash is that of what was sent."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from lsp_agent.context.instructions import (
    BASE_INSTRUCTIONS,
    COMPACT_DESCRIPTION_CHARS,
    COMPACT_INSTRUCTIONS,
    compact_spec,
)
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession
from lsp_agent.domain.ports import ModelRequest, ToolSpec
from lsp_agent.providers.scripted import Script, ScriptedProvider
from lsp_agent.settings.config import ConfigError, load_settings
from tests.helpers import make_env, reply


def test_a_compact_spec_keeps_the_schema_and_drops_the_prose() -> None:
    spec = ToolSpec(name="note", description="Write a note. It is kept forever.\n\nUse when: always.", parameters={
        "type": "object", "required": ["description"], "additionalProperties": False,
        "description": "No fields but these.",
        "properties": {
            "description": {"type": "string", "description": "The note's text."},  # a property named so
            "tags": {"type": "array", "items": {"type": "string", "description": "One tag."}},
            "level": {"anyOf": [{"type": "integer", "minimum": 1, "description": "A level."}, {"type": "null"}]},
        }})
    compact = compact_spec(spec)
    assert compact.description == "Write a note."
    assert compact.parameters == {
        "type": "object", "required": ["description"], "additionalProperties": False,
        "properties": {"description": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
                       "level": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}}}


def test_a_description_without_a_sentence_end_is_cut_at_the_limit() -> None:
    at_limit = "x" * COMPACT_DESCRIPTION_CHARS
    assert compact_spec(ToolSpec(name="t", description=at_limit, parameters={})).description == at_limit
    one_past = compact_spec(ToolSpec(name="t", description=at_limit + "y", parameters={})).description
    assert len(one_past) == COMPACT_DESCRIPTION_CHARS and one_past.endswith("…")


def test_an_unknown_profile_is_a_config_error(tmp_path: Path) -> None:
    assert load_settings(tmp_path).instruction_profile == "default"
    with pytest.raises(ConfigError, match="instructionProfile"):
        load_settings(tmp_path, {"instructionProfile": "tiny"})


async def _first_request(tmp_path: Path, profile: str) -> tuple[ModelRequest, bytes, dict[str, str]]:
    provider = ScriptedProvider(Script(label="test", replies=[reply(text="done")]), record_requests=True)
    env = replace(make_env(tmp_path, [], instructionProfile=profile), provider=provider)
    session = AgentSession(env)
    await Generation(session).run("hello")
    (request,) = provider.requests
    (record,) = env.store.events(session.id, "llm.request")
    return request, provider.encode_request(request), record["hashes"]


@pytest.mark.parametrize("profile", ["default", "compact"])
async def test_the_profile_shapes_the_request_and_the_record_hashes_what_was_sent(tmp_path: Path,
                                                                                   profile: str) -> None:
    request, body, hashes = await _first_request(tmp_path, profile)
    registry = make_env(tmp_path, []).registry.specs()
    assert [t.name for t in request.tools] == [t.name for t in registry]  # same tools, same order
    if profile == "default":
        assert request.instructions == BASE_INSTRUCTIONS and request.tools == registry
    else:
        assert request.instructions == COMPACT_INSTRUCTIONS
        assert request.tools == [compact_spec(t) for t in registry]
    sent = json.dumps(json.loads(body)["tools"], separators=(",", ":"), ensure_ascii=False).encode()
    expected = make_env(tmp_path, []).registry.digest if profile == "default" else hashlib.sha256(sent).hexdigest()
    assert hashes["toolsSha256"] == expected
    assert hashes["instructionsSha256"] == hashlib.sha256(request.instructions.encode()).hexdigest()


async def test_the_compact_request_is_well_under_half_the_default(tmp_path: Path) -> None:
    _, default, _ = await _first_request(tmp_path / "a", "default")
    _, compact, _ = await _first_request(tmp_path / "b", "compact")
    assert len(compact) < 0.5 * len(default), (len(compact), len(default))
