"""context_recover: finds text from before a compaction by its original IDs, pages with `before`,
and never returns reverted, hidden-reasoning, ignored or synthetic text, or a credential value."""

from __future__ import annotations

from pathlib import Path

from lsp_agent.app.toolset import default_tools
from lsp_agent.context.recover import PAGE_PARTS, PART_CHARS, recover, redact
from lsp_agent.core.agent import Agent
from lsp_agent.domain.history import Message, ReasoningPart, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.providers.scripted import ScriptedReply
from lsp_agent.settings.config import Settings
from tests.helpers import call, reply
from tests.unit.test_context_support import COMPACTION, context_env, failing_repo

SECRET = "sk-live-9f8e7d6c5b4a39281706"


def user(text: str, **meta: object) -> Message:
    return Message(role=Role.USER, parts=[TextPart(text=text, metadata=dict(meta))])


def test_the_tool_exists_only_with_the_flag_and_comes_after_the_defaults() -> None:
    plain = [t.name for t in default_tools(Settings())]
    flagged = [t.name for t in default_tools(Settings.model_validate({"experimental": {"context_recovery": True}}))]
    assert "context_recover" not in plain
    assert flagged == [*plain, "context_recover"]


def test_credential_assignments_are_redacted() -> None:
    text = (f"API_KEY={SECRET}\nexport OPENAI_API_KEY='abc123secretvalue'\npassword: hunter2\n"
            '{"client_secret": "s3cr3t-value"}\nAuthorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload\n'
            "url = https://bob:pa55word@example.com/x\ntoken=ghp_abcdefghijklmnopqrstuvwxyz123456\n"
            f"plain {SECRET} in prose\nuse the password flag when asked\n")
    out = redact(text)
    for value in (SECRET, "abc123secretvalue", "hunter2", "s3cr3t-value", "eyJhbGciOiJIUzI1NiJ9", "pa55word",
                  "ghp_abcdefghijklmnopqrstuvwxyz123456"):
        assert value not in out
    assert "API_KEY=[REDACTED]" in out and "password: [REDACTED]" in out and "Bearer [REDACTED]" in out
    assert "use the password flag when asked" in out  # prose is left alone


def test_excluded_material_is_never_returned() -> None:
    reverted_call = Message(role=Role.ASSISTANT, parts=[ToolCallPart(call_id="c", name="run_command",
                                                                     arguments='{"command":"rm needle"}')])
    history = [
        user("needle: the original instruction"),
        Message(role=Role.ASSISTANT, parts=[ReasoningPart(text="needle in my hidden thoughts"),
                                            TextPart(text="needle noted")]),
        user("[note from lsp-agent] needle"),  # looks like a note, but the user typed it: returned
        Message(role=Role.USER, parts=[TextPart(text="needle summary", synthetic=True)]),
        user("needle the user asked to ignore", ignored=True),
        reverted_call,
        Message(role=Role.TOOL, parts=[ToolResultPart(call_id="c", name="run_command", ok=True,
                                                      output="needle removed", metadata={"reverted": True})]),
        Message(role=Role.USER, parts=[TextPart(text="revert", synthetic=True,
                                                metadata={"reverted": {"messages": [reverted_call.id]}})]),
    ]
    page = recover(history, keyword="needle")
    texts = [e for f in page.found for e in f.excerpts]
    assert sorted(texts) == sorted(["needle: the original instruction", "needle noted",
                                    "[note from lsp-agent] needle"])
    assert page.next_before is None
    # Following a pointer to excluded material says so instead of returning it.
    hidden = recover(history, message_id=history[3].id)
    assert hidden.problem is not None and "harness-written" in hidden.problem


def test_pages_of_one_hundred_parts_continue_with_before() -> None:
    history = [user(f"entry {i}: " + ("needle" if i % 50 == 0 else "hay")) for i in range(250)]
    first = recover(history, keyword="needle", limit=10)  # newest first: parts 249 … 150
    assert first.scanned == PAGE_PARTS and first.next_before == history[150].parts[0].id
    assert [f.message_id for f in first.found] == [history[200].id, history[150].id]
    second = recover(history, keyword="needle", before=first.next_before, limit=10)  # 149 … 50
    assert [f.message_id for f in second.found] == [history[100].id, history[50].id]
    assert second.next_before == history[50].parts[0].id
    third = recover(history, keyword="needle", before=second.next_before, limit=10)
    assert [f.message_id for f in third.found] == [history[0].id] and third.next_before is None
    limited = recover(history, keyword="entry", limit=3)
    assert len(limited.found) == 3 and limited.next_before == history[247].parts[0].id
    unknown = recover(history, keyword="needle", before="prt_nope")
    assert unknown.problem is not None


def test_only_the_first_sixteen_thousand_characters_of_a_part_are_scanned_and_excerpts_are_bounded() -> None:
    history = [user("a" * (PART_CHARS - 20) + " needle " + "b" * 5000 + " late needle")]
    (found,) = recover(history, keyword="needle").found
    assert found.matches == 1 and len(found.excerpts[0]) <= 400
    whole = recover(history, message_id=history[0].id).found[0].excerpts[0]
    assert len(whole) < 4100 and "more characters not shown" in whole


async def test_the_model_recovers_pre_compaction_text_by_keyword_and_by_pointer(tmp_path: Path) -> None:
    failing_repo(tmp_path)
    task = f"Deploy with API_KEY={SECRET} but never touch the staging database."
    replies = [*[reply(call("read_file", path=f"data/f{i}.txt")) for i in range(6)], reply(text="paused"),
               reply(call("context_recover", keyword="staging")), reply(text="found it"),
               ScriptedReply(when=COMPACTION, text="Summary without the details.")]
    env, provider = context_env(tmp_path, replies, experimental={"context_recovery": True},
                                compaction={"keep_recent_messages": 2})
    agent = Agent(env)
    first = agent.start(task)
    await agent.wait(first.generation)
    outcome = await agent.context_requests.compact(first.session_id)
    assert outcome.status == "compacted"
    view_text = "\n".join(m.text() for m in agent.session(first.session_id).context_view()[1:])
    assert "staging" not in view_text  # gone from the verbatim history the model sees
    second = agent.start("what was the rule about the database?", first.session_id)
    await agent.wait(second.generation)
    history = agent.session(first.session_id).history
    result = next(p for m in history for p in m.tool_results() if p.name == "context_recover")
    prompt = history[0]
    assert result.ok and f"[{prompt.id}/{prompt.parts[0].id}] user text" in result.output
    assert "never touch the staging database" in result.output
    assert SECRET not in result.output and "API_KEY=[REDACTED]" in result.output
    assert "untrusted data" in result.output and result.metadata["untrusted"] is True
    assert "<untrusted-excerpt>" in result.output
    # The summary says where the originals are, and that this tool reads them by pointer.
    summary = agent.session(first.session_id).context_view()[0].text()
    assert "context_recover reads them by the [message/part] pointers" in summary
    assert f"[{prompt.id}/{prompt.parts[0].id}]" in summary
    assert provider.requests[-1].tools[-1].name == "context_recover"
