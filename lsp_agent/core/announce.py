"""Mid-session changes the model must know of — the project's skills and instruction files, the
settings that shape its work — announced as appended messages, never edited into the instructions, so every
request extends the previous one byte for byte and the provider's prompt cache survives (see
"Requests only grow at the end" in docs/decisions.md).

Skills: the latest announcement the model can still see (after compaction, in the model view)
is compared with the current list by digest; a change, or an announcement compacted away, is
announced again. Settings: the values the model's work depends on are kept as a replay event
(`announce.settings`, not model-visible); the first request of a session records them silently,
a later change is announced with what changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from lsp_agent.context.project_instructions import ProjectInstructions
from lsp_agent.domain.appendonly import extends
from lsp_agent.domain.history import Message, TextPart

ANNOUNCE = "announce"
INSTRUCTIONS = "instructions"
SETTINGS_EVENT = "announce.settings"
NOTE = "[note from lsp-agent]"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _latest_in(parts: Sequence[object], kind: str = "skills") -> str | None:
    for part in reversed(parts):
        mark = part.metadata.get(ANNOUNCE) if isinstance(part, TextPart) else None
        if isinstance(mark, dict) and mark.get("kind") == kind:
            return str(mark.get("digest"))
    return None


def announced_skills(view: Sequence[Message], kind: str = "skills") -> str | None:
    """The digest of the latest announcement of `kind` (skills, instructions) in `view`, or None."""
    for message in reversed(view):
        found = _latest_in(message.parts, kind)
        if found is not None:
            return found
    return None


class SkillsSeen:
    """`announced_skills` of a growing view, scanning only the messages appended since the last call
    (a step used to walk the whole history: the cost grew with every step)."""

    def __init__(self, kind: str = "skills") -> None:
        self.kind = kind
        self._view: list[Message] = []
        self._digest: str | None = None

    def latest(self, view: Sequence[Message]) -> str | None:
        if extends(self._view, view):
            digest = announced_skills(view[len(self._view):], self.kind) or self._digest
        else:  # compacted or folded: the view changed, read it all again
            digest = announced_skills(view, self.kind)
        self._view, self._digest = list(view), digest
        return digest


def skills_note(view: Sequence[Message], block: str, pending: Sequence[TextPart] = (),
                seen: SkillsSeen | None = None) -> TextPart | None:
    """The note announcing `block` (the current skills list), or None when the model has it already
    (in `view`, or in the `pending` notes not yet appended to it)."""
    listed = block.strip()
    digest = _digest(listed)
    last = _latest_in(pending)
    if last is None:
        last = seen.latest(view) if seen is not None else announced_skills(view)
    if last == digest or (last is None and not listed):
        return None
    text = f"{NOTE} {listed}" if listed else f"{NOTE} Skills: none are listed any more (they were retired)."
    return TextPart(text=text, synthetic=True, metadata={ANNOUNCE: {"kind": "skills", "digest": digest}})


def settings_note(previous: dict[str, Any], current: dict[str, Any]) -> TextPart | None:
    changed = [f"{name}: {previous.get(name)!r} → {value!r}" for name, value in current.items()
               if previous.get(name) != value]
    if not changed:
        return None
    return TextPart(text=f"{NOTE} Settings changed for this session: {'; '.join(changed)}.", synthetic=True,
                    metadata={ANNOUNCE: {"kind": "settings", "values": current}})


def instructions_note(view: Sequence[Message], instructions: ProjectInstructions, pending: Sequence[TextPart],
                      seen: SkillsSeen) -> TextPart | None:
    """The note carrying the project instructions, or None when the model has them as they are now.
    The first is the instructions alone; a change repeats them whole, saying they replace the earlier
    ones (appended: the earlier messages stay byte for byte as they were sent)."""
    block = instructions.block()
    digest = _digest(block)
    last = _latest_in(pending, INSTRUCTIONS)
    if last is None:
        last = seen.latest(view)
    if last == digest or (last is None and not block):
        return None
    if last is None:
        text = block
    elif block:
        text = (f"{NOTE} The project instructions changed since they were sent; they now read as follows "
                f"and replace the earlier ones.\n\n{block}")
    else:
        text = f"{NOTE} The project instructions were removed; the earlier ones no longer apply."
    return TextPart(text=text, synthetic=True, metadata={ANNOUNCE: {
        "kind": INSTRUCTIONS, "digest": digest, "files": [f.name for f in instructions.files]}})
