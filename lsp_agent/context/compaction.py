"""Compaction, the step of context management after folding: replace older history by a summary —
checked like any generated artifact.

The model writes the summary (a separate request: the same prefix plus a compaction prompt
in the tail, so the provider's cache still serves it) with the six items of `SIX_ITEMS`,
each with a source pointer. Then the harness checks it: every requirement it extracted from the
replaced history — the task and every user message, every constraint in the instruction
files, every failed check (with the source version it ran against), every failed attempt,
every file touched (cited by its path) and a next step — must appear in it with its pointer.
What is missing is appended mechanically, pointer and
all, and the result records what was repaired. Only then does the summary replace anything.

Why a summary is checked at all: see "Context management: fold, then a checked compaction, then a
handoff" in docs/decisions.md.

Pointers are `msg_…/prt_…` (a stored part; context_recover follows them) or `FILE:L<n>`
for a line of an instruction file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_agent.context.project_instructions import CUT_MARK, INSTRUCTION_FILES, read_project_instructions
from lsp_agent.context.view import HANDOFF, compaction_of
from lsp_agent.domain import bounded_json
from lsp_agent.domain.history import Message, Role, TextPart, ToolCallPart, ToolResultPart

__all__ = [
    "INSTRUCTION_FILES",
    "Item",
    "check_summary",
    "compaction_prompt",
    "harness_summary",
    "missing_items",
    "plan_cut",
    "repair_section",
    "required_items",
    "touched_files",
]

#: A user message up to this long is kept whole; a longer one keeps its first sentence and directives.
WHOLE_MESSAGE_CHARS = 600
ITEM_CHARS = 1_200
INSTRUCTION_FILE_CHARS = 20_000
MAX_FILE_ITEMS = 60
MAX_FAILED_ATTEMPTS = 40
MAX_SHOWN_FAILURES = 5
_DIRECTIVE = re.compile(
    r"\b(do not|don't|dont|never|must|mustn't|always|only|should|shouldn't|avoid|keep|make sure|ensure|"
    r"require[sd]?|required|prefer|instead|without|no longer|stop|forbidden|not allowed|leave)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True)
class Item:
    """Something the summary must keep, with the pointer to where it came from."""

    kind: str  # task | user | constraint | failed_check | failed_attempt | file | next_step
    pointer: str
    text: str

    def line(self) -> str:
        return f"- [{self.pointer}] {self.kind.replace('_', ' ')}: {self.text}"

    def wire(self) -> dict[str, str]:
        return {"kind": self.kind, "pointer": self.pointer, "text": self.text}

    @classmethod
    def of(cls, data: Any) -> Item | None:
        if isinstance(data, dict) and all(isinstance(data.get(k), str) for k in ("kind", "pointer", "text")):
            return cls(data["kind"], data["pointer"], data["text"])
        return None


def _bounded(text: str, limit: int = ITEM_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def directives(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip() and _DIRECTIVE.search(s)]


def _user_text(text: str) -> str:
    """A short message whole; a long one (pasted logs, specs) by its first sentence and directives."""
    if len(text) <= WHOLE_MESSAGE_CHARS:
        return _bounded(text)
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    kept = list(dict.fromkeys(sentences[:1] + directives(text)))
    return _bounded(" … ".join(kept))


def _args_short(arguments: str, limit: int = 160) -> str:
    try:
        parsed = bounded_json.loads(arguments or "{}")
        arguments = json.dumps(parsed, ensure_ascii=False, separators=(",", ":"))
    except json.JSONDecodeError:
        pass
    return _bounded(arguments, limit)


def _first_line(text: str, limit: int = 240) -> str:
    return _bounded(text.split("\n", 1)[0], limit)


def _signature(envelope: dict[str, Any]) -> str:
    checks = [(c.get("kind"), c.get("exitCode"), c.get("timedOut"),
               [(f.get("file"), f.get("line"), f.get("message")) for f in c.get("failures") or []])
              for c in envelope.get("checks") or [] if isinstance(c, dict)]
    return json.dumps([envelope.get("status"), envelope.get("error"), checks], sort_keys=True, default=str)


def failure_signature(part: ToolResultPart) -> str | None:
    """Identity of a failed verification (same checks failing the same way), None if it passed."""
    envelope = part.metadata.get("envelope")
    if not isinstance(envelope, dict) or envelope.get("status") == "passed":
        return None
    return _signature(envelope)


def _check_text(part: ToolResultPart, envelope: dict[str, Any], written: dict[str, int | None],
                times: int) -> str:
    shown: list[str] = []
    failing_files: list[str] = []
    for check in envelope.get("checks") or []:
        for failure in (check.get("failures") or [])[:MAX_SHOWN_FAILURES]:
            where = f"{failure.get('file')}:{failure.get('line')}" if failure.get("file") else "?"
            shown.append(f"{where}: {_bounded(str(failure.get('message') or ''), 160)}")
            if failure.get("file"):
                failing_files.append(str(failure["file"]))
    revision = envelope.get("revision")
    version = f"sources fingerprint {str(envelope.get('fingerprint') or 'none')[:16]}"
    if revision:
        version += f", git {str(revision)[:12]}" + (" (clean)" if envelope.get("clean") else " (with local changes)")
    files = []
    for path in dict.fromkeys(failing_files):
        step = written.get(path)
        files.append(f"{path} as last written at step {step}" if step is not None
                     else f"{path} not edited by the agent before the check")
    text = f"{_first_line(part.output)}; ran against {version}"
    if files:
        text += "; file versions: " + ", ".join(files)
    if shown:
        text += "; failures: " + " | ".join(shown)
    if times > 1:
        text += f" (the same failure {times} times)"
    return _bounded(text, ITEM_CHARS * 2)


def instruction_items(root: Path) -> list[Item]:
    """Constraints of the project's instruction files (the files the model is sent, read the same
    guarded way), one per directive or bullet line."""
    items: list[Item] = []
    for file in read_project_instructions(root, INSTRUCTION_FILE_CHARS * len(INSTRUCTION_FILES)).files:
        found = 0
        for number, line in enumerate(file.text.splitlines(), 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#") or stripped.startswith(CUT_MARK):
                continue
            if _BULLET.match(line) or _DIRECTIVE.search(stripped):
                items.append(Item("constraint", f"{file.name}:L{number}", _bounded(_BULLET.sub("", stripped), 300)))
                found += 1
                if found >= MAX_FILE_ITEMS:
                    break
    return items


def required_items(replaced: Sequence[Message], root: Path | None) -> list[Item]:
    """What a summary replacing `replaced` (stored originals from the session's start, oldest
    first) must keep. Earlier summaries need not be trusted: their originals are in `replaced`
    too. A handoff note's items are carried (their originals live in the parent session)."""
    items: dict[str, Item] = {}
    calls: dict[str, ToolCallPart] = {}
    written: dict[str, int | None] = {}
    checks: dict[str, Item] = {}
    check_times: dict[str, int] = {}
    attempts: dict[tuple[str, str], Item] = {}
    task_seen = False
    for message in replaced:
        for part in message.parts:
            if isinstance(part, TextPart) and part.synthetic:
                info = part.metadata.get(HANDOFF)
                if isinstance(info, dict):
                    for data in info.get("items") or []:
                        item = Item.of(data)
                        if item is not None:
                            items.setdefault(item.pointer, item)
                            task_seen = task_seen or item.kind == "task"
                continue
            pointer = f"{message.id}/{part.id}"
            if isinstance(part, TextPart) and message.role is Role.USER and not part.metadata.get("ignored"):
                items[pointer] = Item("user" if task_seen else "task", pointer, _user_text(part.text))
                task_seen = True
            elif isinstance(part, ToolCallPart):
                calls[part.call_id] = part
            elif isinstance(part, ToolResultPart):
                envelope = part.metadata.get("envelope")
                signature = failure_signature(part)
                if isinstance(envelope, dict) and signature is not None:
                    # The same failure again keeps one item: the latest, with the count.
                    check_times[signature] = check_times.get(signature, 0) + 1
                    checks.pop(signature, None)
                    checks[signature] = Item("failed_check", pointer,
                                             _check_text(part, envelope, written, check_times[signature]))
                elif not part.ok and not isinstance(envelope, dict):
                    call = calls.get(part.call_id)
                    action = f"{part.name} {_args_short(call.arguments)}" if call is not None else part.name
                    key = (part.name, _first_line(part.output, 120))
                    attempts.pop(key, None)
                    attempts[key] = Item("failed_attempt", pointer, f"{action} → {_first_line(part.output)}")
                for path in part.metadata.get("written") or []:
                    written[str(path)] = message.step
    for item in [*checks.values(), *list(attempts.values())[-MAX_FAILED_ATTEMPTS:]]:
        items.setdefault(item.pointer, item)
    if root is not None:
        for item in instruction_items(root):
            items.setdefault(item.pointer, item)
    for item in _file_items(replaced):
        items.setdefault(item.pointer, item)
    if replaced:
        last = list(items.values())
        items.setdefault(NEXT_STEP, _next_step(list(checks.values()), [i for i in last if i.kind in ("task", "user")]))
    return list(items.values())


#: The pointer of the next-step item: the summary keeps it when it says what the next step is.
NEXT_STEP = "next step"
_NEXT = re.compile(r"\bnext\b", re.IGNORECASE)


def _file_items(replaced: Sequence[Message]) -> list[Item]:
    """Every file touched, cited by its path, with its last state and where that happened."""
    last: dict[str, tuple[str, str, int | None]] = {}
    for message in replaced:
        for part in message.tool_results():
            for path in part.metadata.get("read") or []:
                if last.get(str(path), ("",))[0] != "written":
                    last[str(path)] = ("read", f"{message.id}/{part.id}", message.step)
            for path in part.metadata.get("written") or []:
                last[str(path)] = ("written", f"{message.id}/{part.id}", message.step)
    recent = sorted(last.items(), key=lambda kv: kv[1][1])[-MAX_FILE_ITEMS:]
    out = []
    for path, (state, pointer, step) in sorted(recent):
        when = f" at step {step}" if step is not None else ""
        out.append(Item("file", path, f"{state}{when} [{pointer}]"))
    return out


def _next_step(failed_checks: Sequence[Item], asks: Sequence[Item]) -> Item:
    """What a summary that names no next step gets: derived from the record, not invented."""
    if failed_checks:
        text = f"fix the failing check ({_bounded(failed_checks[-1].text, 300)}), then verify again"
    elif asks:
        text = f"continue with: {_bounded(asks[-1].text, 300)} — re-read the files you need, then verify"
    else:
        text = "re-read the files you need, continue the task, then verify"
    return Item("next_step", NEXT_STEP, text)


def _cited(summary: str, item: Item) -> bool:
    if item.kind == "next_step":
        return bool(_NEXT.search(summary))
    if item.kind == "file":  # a path, not a substring of a longer one
        return re.search(rf"(?<![\w./-]){re.escape(item.pointer)}(?![\w/-]|\.\w)", summary) is not None
    return item.pointer in summary


def missing_items(summary: str, items: Iterable[Item]) -> list[Item]:
    """Items the summary does not cite: not provably kept, so they are put back."""
    return [i for i in items if not _cited(summary, i)]


def repair_section(missing: Sequence[Item]) -> str:
    if not missing:
        return ""
    return ("Restored by lsp-agent (the summary above did not cite them; quoted from the original "
            "history):\n" + "\n".join(i.line() for i in missing))


def check_summary(summary: str, items: Sequence[Item]) -> tuple[str, list[Item]]:
    """The checked summary: the model's text plus every missing item, mechanically appended."""
    missing = missing_items(summary, items)
    section = repair_section(missing)
    return (f"{summary.rstrip()}\n\n{section}" if section else summary.rstrip()), missing


def touched_files(messages: Iterable[Message]) -> dict[str, str]:
    """Files read or written in `messages`: path → `read` / `written` (the last thing done)."""
    state: dict[str, str] = {}
    for message in messages:
        for part in message.tool_results():
            for path in part.metadata.get("read") or []:
                state.setdefault(str(path), "read")
            for path in part.metadata.get("written") or []:
                state[str(path)] = "written"
    return state


def harness_summary(items: Sequence[Item], files: dict[str, str]) -> str:
    """The summary when the model gave none: the checked items and the files, mechanically."""
    lines = ["The model returned no summary; this one was assembled by lsp-agent from the record."]
    if files:
        lines.append("Files touched: " + ", ".join(f"{p} ({s})" for p, s in sorted(files.items())))
    lines.append("Next step: re-read the files you need and continue the task.")
    return "\n".join(lines)


SIX_ITEMS = """\
1. The task and its acceptance check.
2. Every constraint and decision, with the message it came from.
3. What was tried and how it failed.
4. The unresolved failures, and which file version the check ran against.
5. The files touched and their state.
6. The next step."""


def compaction_prompt(marker: str, replaced: int, items: Sequence[Item], purpose: str) -> str:
    """The request tail that asks for the summary. `marker` opens it (scripts match on it)."""
    listed = "\n".join(i.line() for i in items) or "(none)"
    return (
        f"{marker} {purpose} Write it for yourself: the work must be able to continue from it alone. "
        f"It replaces the {replaced} older messages of this conversation (the originals stay in the session "
        "store). Give these six items, citing for each fact its source pointer in brackets, exactly as "
        "written below (e.g. [msg_…/prt_…] or [AGENTS.md:L3]):\n"
        f"{SIX_ITEMS}\n"
        "Drop raw tool output: files can be re-read and commands re-run. Every item below must appear in "
        "your summary with its pointer; a missing one will be added back verbatim:\n"
        f"{listed}\n"
        "Reply with the summary text only; do not call tools."
    )


def plan_cut(view: Sequence[Message], keep_recent: int, sizes: Sequence[int], tail_limit: int) -> int | None:
    """Index of the first view message kept verbatim, or None when nothing can be replaced.

    The tail keeps the last `keep_recent` messages (fewer when they alone would not fit in
    `tail_limit` tokens), and never starts with tool results whose calls would be summarized
    away; at least one message besides a previous summary must be replaced.
    """
    n = len(view)
    lower = 2 if n and compaction_of(view[0]) is not None else 1
    cut = max(lower, n - keep_recent)
    while cut < n - 1 and sum(sizes[cut:]) > tail_limit:
        cut += 1
    start = cut
    while cut >= lower and cut < n and view[cut].role is Role.TOOL:
        cut -= 1
    if cut < lower:
        cut = start
        while cut < n and view[cut].role is Role.TOOL:
            cut += 1
    if cut >= n or cut < lower:
        return None
    return cut
