"""Shared pieces of the context-management tests: a scripted model that keeps every request it
receives, the text a real provider would put on the wire, and a small repository with a failing
type check. (Its one test checks the recorder itself.)"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lsp_agent.app.runtime import open_environment
from lsp_agent.core.session import Environment
from lsp_agent.domain.history import TextPart, ToolCallPart, ToolResultPart
from lsp_agent.domain.ports import ModelRequest
from lsp_agent.providers.scripted import Script, ScriptedProvider, ScriptedReply
from lsp_agent.settings.config import load_settings
from tests.helpers import RecordingSink, git_repo, reply, verify_config

PY = sys.executable
COMPACTION = "[lsp-agent compaction"
HANDOFF = "[lsp-agent handoff]"


class RecordingProvider(ScriptedProvider):
    """The scripted model, keeping each request exactly as the loop handed it over."""

    def __init__(self, script: Script) -> None:
        super().__init__(script, record_requests=True)

    def step_requests(self) -> list[ModelRequest]:
        """Requests for a step of the loop (not the harness's summary/handoff requests)."""
        return [r for r in self.requests if not any(COMPACTION in t or HANDOFF in t for t in r.tail)]


def visible_text(request: ModelRequest) -> str:
    """What a provider sends as text: instructions, message texts, tool calls and results, the tail.
    (Part metadata never reaches the model, so it is not here.)"""
    out = [request.instructions]
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                out.append(part.text)
            elif isinstance(part, ToolCallPart):
                out.append(f"{part.name} {part.arguments}")
            elif isinstance(part, ToolResultPart):
                out.append(part.output)
    return "\n".join([*out, *request.tail])


def context_env(root: Path, replies: list[ScriptedReply], sink: RecordingSink | None = None,
                **overrides: Any) -> tuple[Environment, RecordingProvider]:
    settings = load_settings(root, overrides)
    provider = RecordingProvider(Script(label="test", replies=replies))
    return open_environment(root, settings, provider, sink or RecordingSink()), provider


def data_files(count: int = 10, lines: int = 20) -> dict[str, str]:
    return {f"data/f{i}.txt": "".join(f"line {j} of data file {i}: {'x' * 30}\n" for j in range(lines))
            for i in range(count)}


MYPY_FAILURE = "model.py:1: error: X must be 2  [misc]"


def failing_repo(root: Path, extra: dict[str, str] | None = None) -> Path:
    """A git repo whose type check (a mypy-shaped script) fails on model.py line 1."""
    files = {"view.py": "VIEW = 1\n", "model.py": "X = 1\n",
             "check.py": f"import sys\nprint({MYPY_FAILURE!r})\nprint('Found 1 error in 1 file (checked 2 source "
                         "files)')\nsys.exit(1)\n",
             **data_files(), **(extra or {})}
    git_repo(root, files)
    verify_config(root, [PY, "check.py"], kind="typecheck", parser="mypy")
    return root


async def test_recording_provider_keeps_each_request_and_its_visible_text(tmp_path: Path) -> None:
    from lsp_agent.core.loop import Generation
    from lsp_agent.core.session import AgentSession

    env, provider = context_env(tmp_path, [reply(text="done")])
    await Generation(AgentSession(env)).run("the task")
    assert len(provider.requests) == 1
    assert "the task" in visible_text(provider.requests[0])
