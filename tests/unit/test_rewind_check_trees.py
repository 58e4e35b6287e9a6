"""Which check stands after a rewind: the restored tree against the trees the checks ran on, and the
history marker that names the check standing again."""

from __future__ import annotations

from lsp_agent.app.rewind_verification import after_code_rewind, after_fork
from lsp_agent.checkpoints.chain import Entry, Record
from lsp_agent.core.session import external_change_note
from lsp_agent.domain.events import VerificationStatus
from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart, ToolResultPart
from lsp_agent.domain.verification import derive

SESSION = "ses_a"


def entry(digest: str) -> Entry:
    return ("f", digest, 0o100644, 1, 1, 1)


def check(call_id: str, status: str, written: list[str] | None = None) -> tuple[Message, Message]:
    asked = Message(role=Role.ASSISTANT, parts=[ToolCallPart(call_id=call_id, name="verify_project", arguments="{}")])
    meta: dict[str, object] = {"envelope": {"status": status, "checks": [{"executed": True, "exitCode": 0}]}}
    if written:
        meta.update(written=written, writer="command")
    answered = Message(role=Role.TOOL, parts=[ToolResultPart(call_id=call_id, name="verify_project", ok=True,
                                                             output="", metadata=meta)])
    return asked, answered


def edit(call_id: str, path: str) -> tuple[Message, Message]:
    asked = Message(role=Role.ASSISTANT, parts=[ToolCallPart(call_id=call_id, name="write_file", arguments="{}")])
    answered = Message(role=Role.TOOL, parts=[ToolResultPart(call_id=call_id, name="write_file", ok=True, output="",
                                                             metadata={"written": [path]})])
    return asked, answered


def verify_record(seq: int, message: str, changes: dict[str, Entry | None]) -> Record:
    return Record(seq, SESSION, message, 1, "verify_project", "after", 0.0, changes)


def history() -> tuple[list[Message], list[Record], str, str]:
    """prompt, check (passes) over calc=v1, prompt 2, an edit to calc=v2; the check's part id, prompt 2's id."""
    prompt = Message(role=Role.USER, parts=[TextPart(text="fix")])
    asked, answered = check("c1", "passed")
    second = Message(role=Role.USER, parts=[TextPart(text="more")])
    wrote, result = edit("c2", "calc.py")
    records = [Record(1, "", "", 0, "baseline", "baseline", 0.0, {"calc.py": entry("v0")}),
               Record(2, SESSION, asked.id, 1, "verify_project", "before", 0.0, {"calc.py": entry("v1")}),
               verify_record(3, asked.id, {}),
               Record(4, SESSION, wrote.id, 2, "write_file", "after", 0.0, {"calc.py": entry("v2")})]
    return [prompt, asked, answered, second, wrote, result], records, answered.parts[0].id, second.id


def test_the_latest_passing_check_over_exactly_the_restored_tree_stands_again() -> None:
    messages, records, check_id, _ = history()
    assert after_code_rewind(messages, records, SESSION, {"calc.py": entry("v1")}) == check_id
    assert after_code_rewind(messages, records, SESSION, {"calc.py": entry("v0")}) is None
    assert after_code_rewind(messages, records, SESSION, {"calc.py": entry("v1"), "new.txt": entry("x")}) is None


def test_a_later_failing_check_over_the_same_tree_is_the_one_that_counts() -> None:
    messages, records, _, _ = history()
    asked, answered = check("c3", "failed")
    records.append(Record(5, SESSION, asked.id, 3, "verify_project", "before", 0.0, {"calc.py": entry("v1")}))
    records.append(verify_record(6, asked.id, {}))
    assert after_code_rewind([*messages, asked, answered], records, SESSION, {"calc.py": entry("v1")}) is None


def test_a_fork_names_what_differs_from_the_tree_its_standing_check_saw() -> None:
    messages, records, _, second = history()
    assert after_fork(messages, second, records, SESSION, {"calc.py": entry("v1")}) == []
    assert after_fork(messages, second, records, SESSION, {"calc.py": entry("hand")}) == ["calc.py"]
    assert after_fork(messages, second, records[:2], SESSION, {"calc.py": entry("v1")}) is None  # tree not kept


def test_the_marker_restores_only_a_passing_check_that_stood_on_its_own() -> None:
    messages, _, check_id, _ = history()

    def after(marker_check: str | None) -> VerificationStatus:
        note = Message(role=Role.USER, parts=[external_change_note(["calc.py"], "", marker_check)])
        return derive([*messages, note]).status
    assert after(check_id) is VerificationStatus.VERIFIED
    assert after(None) is VerificationStatus.NOT_RUN
    assert after("prt_unknown") is VerificationStatus.NOT_RUN
    asked, answered = check("c9", "passed", written=["calc.py"])  # the check changed its own sources
    note = Message(role=Role.USER, parts=[external_change_note(["calc.py"], "", answered.parts[0].id)])
    assert derive([*messages, asked, answered, note]).status is VerificationStatus.NOT_RUN




def test_two_checks_in_one_message_leave_its_tree_unknown() -> None:
    messages, records, _, _ = history()
    records.insert(3, verify_record(3, records[2].message, {"calc.py": entry("v9")}))
    assert after_code_rewind(messages, records, SESSION, {"calc.py": entry("v1")}) is None
    assert after_code_rewind(messages, records, SESSION, {"calc.py": entry("v9")}) is None
