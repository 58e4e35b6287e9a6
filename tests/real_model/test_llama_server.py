"""The harness against llama.cpp's llama-server and a real (tiny) model, SmolLM2-135M-Instruct.

A 135M model does not plan, but it repeats: prompts of the form `Repeat after me:
<tool_call>{...}</tool_call>` make it emit real tool calls, which the server's Qwen2.5
template parses into structured calls (or, failing that, the harness reads them as text:
toolCallFormat = "auto"). Every effect still goes through the controller, and `verified`
is derived from the check that ran. It repeats apply_patch and verify_project exactly, but
not read_file (it writes apply_patch's name), so the demo task edits without reading first.
Then the faults seen against real servers: a reply cut by the output limit, a history holding
a cut call, a prompt larger than the context, a wrong base URL, the server killed mid-stream.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_agent.domain.history import Message, Role, TextPart
from lsp_agent.domain.ports import ProviderError, ProviderErrorKind, ReplyDone, TextDelta
from lsp_agent.providers.chat_completions import ChatCompletionsProvider
from lsp_agent.providers.discovery import discover
from lsp_agent.providers.http_base import RetryPolicy
from lsp_agent.settings.config import ProviderConfig
from tests.providers.loopback import AgentRun, Wire, run_agent, simple_request, write_workspace
from tests.real_model.conftest import CONTEXT, LlamaServer

MODEL = "openai-compatible/smollm2"
CHECK = """\
import pathlib, sys
value = pathlib.Path("result.txt").read_text().strip()
print(f"result.txt holds {value!r}")
sys.exit(0 if value == "4" else 1)
"""
# No baseUrl here: --base-url fills it (provider settings compose with the flag).
# The compact profile: 762 instead of 1,829 prompt tokens (2.5x faster here; docs/providers.md);
# idleTimeoutS: a CPU server streams nothing until it has processed the prompt; maxOutputTokens: a
# reply in prose instead of a call ends in seconds, not minutes.
CONFIG = ('toolProfile = "minimal"\ninstructionProfile = "compact"\n'
          f'[[tools.verify]]\nkind = "test"\nargv = [{json.dumps(sys.executable)}, "check.py"]\n'
          '[providers.openai-compatible]\ntoolCallFormat = "auto"\nmaxRetries = 1\n'
          'idleTimeoutS = 600\nmaxOutputTokens = 256\n')
TIMEOUT_S = 300.0


def repeat(name: str, **arguments: Any) -> str:
    call = json.dumps({"name": name, "arguments": arguments})
    return f"Repeat after me: <tool_call>\n{call}\n</tool_call>"


def demo_workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", {"result.txt": "5\n", "check.py": CHECK}, CONFIG)


async def agent(llama: LlamaServer, root: Path, prompt: str, *extra: str, wire: Wire = "chat") -> AgentRun:
    return await run_agent(prompt, root, llama.url, wire, "--max-steps", "1", *extra, model=MODEL,
                           timeout_s=TIMEOUT_S)


def completed(run: AgentRun, tool: str, status: str = "completed") -> bool:
    return any(u["part"]["tool"] == tool and u["part"]["state"]["status"] == status for u in run.of("tool_use"))


async def until_called(llama: LlamaServer, root: Path, name: str, *, outcome: str = "completed",
                       **arguments: Any) -> AgentRun:
    """One model call in a fresh session. In a continued session the 135M model answers with an echo
    of the previous tool result (`<tool_response>OK: …`) instead of the call it is asked to repeat."""
    for _ in range(2):
        run = await agent(llama, root, repeat(name, **arguments))
        assert run.finish["stopReason"] != "error", f"{run.finish}\n{run.stderr}\n{llama.log()}"
        if completed(run, name, outcome):
            return run
    raise AssertionError(f"the model never called {name}: {run.types()}\n{run.stderr}")


async def test_the_server_reports_its_context_window(llama: LlamaServer) -> None:
    facts = await discover(ProviderConfig.model_validate({"baseUrl": llama.url}), "smollm2")
    assert facts.context_window == CONTEXT
    assert facts.source == "llama.cpp /v1/models meta.n_ctx"


async def test_the_demo_task_through_the_cli_reaches_verified(llama: LlamaServer, tmp_path: Path) -> None:
    """The model edits result.txt (5 -> 4) with apply_patch, then runs verify_project; the harness
    checks and applies each call, and `verified` comes from check.py's exit code."""
    root = demo_workspace(tmp_path)

    patch = await until_called(llama, root, "apply_patch", path="result.txt", old_text="5", new_text="4")
    assert f"context window {CONTEXT} tokens (from the server: llama.cpp /v1/models meta.n_ctx)" in patch.stderr
    assert (root / "result.txt").read_text() == "4\n"
    assert patch.finish["verification"] == "not_run"
    verify = await until_called(llama, root, "verify_project")

    assert verify.finish["verification"] == "verified", verify.finish
    result = next(u for u in verify.of("tool_use") if u["part"]["tool"] == "verify_project")
    assert "OK: verify passed" in json.dumps(result)


async def test_the_demo_check_fails_when_the_edit_is_wrong(llama: LlamaServer, tmp_path: Path) -> None:
    """The same check with the model's edit writing 3: verify_project runs and the run is not verified."""
    root = demo_workspace(tmp_path)
    await until_called(llama, root, "apply_patch", path="result.txt", old_text="5", new_text="3")
    verify = await until_called(llama, root, "verify_project", outcome="error")
    assert verify.finish["verification"] == "failed", verify.finish
    assert "ERROR: verify failed" in json.dumps(verify.of("tool_use"))


async def test_the_responses_wire_reads_llama_server(llama: LlamaServer, tmp_path: Path) -> None:
    root = demo_workspace(tmp_path)
    run = await agent(llama, root, repeat("read_file", path="result.txt"), wire="responses")
    assert run.finish["stopReason"] != "error", f"{run.finish}\n{run.stderr}"
    assert run.finish["steps"] == 1


async def test_a_reply_cut_by_the_output_limit_runs_nothing_and_the_session_goes_on(
        llama: LlamaServer, tmp_path: Path) -> None:
    root = demo_workspace(tmp_path)
    long_patch = repeat("apply_patch", path="result.txt", old_text="5", new_text="4 " * 40)

    cut = await agent(llama, root, long_patch, "--config", "providers.openai-compatible.maxOutputTokens=12")

    assert cut.finish["stopReason"] == "step_limit", f"{cut.finish}\n{cut.stderr}"
    assert [s["part"]["reason"] for s in cut.of("step_finish")] == ["length"]
    assert [n["kind"] for n in cut.of("notice")] == ["truncated"]
    assert all(u["part"]["state"]["status"] == "error" for u in cut.of("tool_use"))
    assert (root / "result.txt").read_text() == "5\n"  # the cut call never ran

    # The history now holds the cut reply (and maybe its half call): the server still accepts it.
    after = await agent(llama, root, repeat("read_file", path="result.txt"), "--session", cut.finish["sessionID"])
    assert after.finish["stopReason"] != "error", f"{after.finish}\n{after.stderr}\n{llama.log()}"


async def test_a_prompt_larger_than_the_context_says_so_with_the_numbers(
        llama: LlamaServer, tmp_path: Path) -> None:
    root = demo_workspace(tmp_path)
    huge = "Summarise this: " + "the quick brown fox jumps over the lazy dog " * 700

    # The user claims a large window, so the harness sends it and the server refuses.
    run = await agent(llama, root, huge, "--config", "compaction.context_window=100000")

    assert run.finish["stopReason"] == "error"
    message = run.finish["error"]["message"]
    # llama-server refuses before the stream (HTTP 400) or reports it as the stream's first event.
    assert f"{llama.url}/chat/completions answered HTTP 400" in message or "mid-stream" in message
    assert "larger than the server's context (prompt " in message and f"context {CONTEXT})" in message
    assert "(after 1 attempt(s))" in message  # a deterministic refusal is not retried


async def test_a_wrong_base_url_names_the_url_and_the_fix(llama: LlamaServer, tmp_path: Path) -> None:
    root = demo_workspace(tmp_path)
    wrong = llama.url.removesuffix("/v1") + "/api/v9"
    run = await run_agent("hello", root, wrong, "chat", "--max-steps", "1", model=MODEL, timeout_s=TIMEOUT_S)

    assert run.finish["stopReason"] == "error"
    message = run.finish["error"]["message"]
    assert f"{wrong}/chat/completions answered HTTP 404" in message
    assert "check the base URL" in message


async def test_killing_the_server_mid_stream_discards_the_partial_reply(own_llama: LlamaServer) -> None:
    config = ProviderConfig.model_validate({"baseUrl": own_llama.url, "maxRetries": 0, "idleTimeoutS": 30})
    provider = ChatCompletionsProvider(config, model="smollm2", retry=RetryPolicy(base_s=0.01), max_output_tokens=400)
    story = Message(role=Role.USER, parts=[TextPart(text="Write a long story about a cat who learns to sail.")])
    request = simple_request(tools=[], instructions="You are a storyteller.", messages=[story])
    seen: list[Any] = []
    try:
        with pytest.raises(ProviderError) as failure:
            async for event in provider.stream(request):
                seen.append(event)
                if isinstance(event, TextDelta) and len(seen) == 3:
                    own_llama.proc.kill()
    finally:
        await provider.aclose()
    assert failure.value.kind is ProviderErrorKind.STREAM_CUT, failure.value.describe()
    assert any(isinstance(e, TextDelta) for e in seen)
    assert not any(isinstance(e, ReplyDone) for e in seen)  # nothing partial is ever completed
