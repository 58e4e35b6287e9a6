"""tail_reminders (experimental flag): per-request reminders at the END of the request.

Step budget left, the verification status derived from the record, and the files whose
earlier reads are stale or that must be read again before an edit. They travel in
`ModelRequest.tail` (a final user message on the wire) and are never stored: the stored
user messages, reasoning, tool history and static instructions stay exactly as they were,
so every request still extends the previous one up to the tail.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lsp_agent.context.stale import stale_reads
from lsp_agent.domain.events import VerificationStatus
from lsp_agent.domain.history import Message
from lsp_agent.domain.verification import derive

__all__ = ["reminders"]

MAX_FILES = 12


def _files(paths: Iterable[str]) -> str:
    ordered = sorted(paths)
    shown = ", ".join(ordered[:MAX_FILES])
    return shown + (f" and {len(ordered) - MAX_FILES} more" if len(ordered) > MAX_FILES else "")


def reminders(history: Sequence[Message], step: int, max_steps: int, reread_required: Iterable[str]) -> list[str]:
    lines = [f"Step {step} of {max_steps}: {max(0, max_steps - step)} more after this one."]
    check = derive(history)
    if check.status is VerificationStatus.VERIFIED:
        lines.append(f"Verification: passed (verify_project part {check.part_id}), nothing written since.")
    elif check.status is VerificationStatus.FAILED:
        lines.append(f"Verification: FAILED (verify_project part {check.part_id}); fix the failures and "
                     "verify again.")
    else:
        lines.append("Verification: not run since the last change; run verify_project before you finish.")
    stale = stale_reads(history)
    if stale:
        described = [f"{s.path} ({'changed outside the agent' if s.outside else 'rewritten'}"
                     + (f" at step {s.changed_step}" if s.changed_step is not None else "") + ")"
                     for s in sorted(stale, key=lambda s: s.path)[:MAX_FILES]]
        lines.append("Stale reads, re-read before editing: " + ", ".join(described) + ".")
    reread = set(reread_required) - {s.path for s in stale}
    if reread:
        lines.append(f"Read again before editing: {_files(reread)}.")
    return ["[reminder from lsp-agent for this request only; not from the user]\n" + "\n".join(lines)]
