"""context_recover's page and part bounds are settings (`limits.recover_page_parts`,
`limits.recover_part_chars`), seen through a scripted model's tool call: a match at the bound is
found, one just past it is not (and the tool says the older history was not scanned)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsp_agent.domain.history import ToolResultPart
from tests.helpers import call, reply, run_script


async def recover_result(root: Path, prompt: str, **limits: Any) -> ToolResultPart:
    (root / "a.txt").write_text("a\n", encoding="utf-8")
    replies = [reply(call("read_file", path="a.txt")), reply(call("read_file", path="a.txt")),
               reply(call("context_recover", keyword="needle")), reply(text="done")]
    _, session = await run_script(root, replies, prompt=prompt, experimental={"context_recovery": True},
                                  limits=limits)
    return next(p for m in session.history for p in m.tool_results() if p.name == "context_recover")


# Before the call, newest first: read result, read call, read result, read call, the prompt: 5 parts.
async def test_a_page_of_recover_page_parts_reaches_the_prompt(tmp_path: Path) -> None:
    result = await recover_result(tmp_path, "the needle is here", recover_page_parts=5)
    assert result.ok and result.metadata["scanned"] == 5 and len(result.metadata["matches"]) == 1
    assert "[END]" in result.output


async def test_one_part_fewer_stops_short_and_says_so(tmp_path: Path) -> None:
    result = await recover_result(tmp_path, "the needle is here", recover_page_parts=4)
    assert result.ok and result.metadata["scanned"] == 4 and result.metadata["matches"] == []
    assert result.metadata["next_before"] and "[MORE] older parts were not scanned" in result.output


async def test_a_match_ending_at_recover_part_chars_is_found(tmp_path: Path) -> None:
    prompt = "x" * 194 + "needle" + " and more after the bound"  # the match ends at character 200
    result = await recover_result(tmp_path, prompt, recover_part_chars=200)
    assert len(result.metadata["matches"]) == 1


async def test_a_match_one_character_past_recover_part_chars_is_not(tmp_path: Path) -> None:
    prompt = "x" * 195 + "needle"  # ends at character 201
    result = await recover_result(tmp_path, prompt, recover_part_chars=200)
    assert result.ok and result.metadata["matches"] == []
    found = await recover_result(tmp_path, prompt)  # the default reads the first 16,000
    assert len(found.metadata["matches"]) == 1
