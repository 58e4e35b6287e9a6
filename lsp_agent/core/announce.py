"""Mid-session changes the model must know of — the project's skills, the settings that shape its
work — announced as appended messages, never edited into the instructions, so every
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

from lsp_agent.domain.appendonly import extends
from lsp_agent.domain.history import Message, TextPart

ANNOUNCE = "announce"
SETTINGS_EVENT = "announce.settings"
NOTE = "[note from lsp-agent]"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _latest_in(parts: Sequence[object]) -> str | None:
    for part in reversed(parts):
        mark = part.metadata.get(ANNOUNCE) if isinstance(part, TextPart) else None
        if isinstance(mark, dict) and mark.get("kind") == "skills":
            return str(mark.get("digest"))
    return None


def announced_skills(view: Sequence[Message]) -> str | None:
    """The digest of the latest skills announcement in `view`, or None."""
    for message in reversed(view):
        found = _latest_in(message.parts)
        if found is not None:
            return found
    return None


class SkillsSeen:
    """`announced_skills` of a growing view, scanning only the messages appended since the last call
    (a step used to walk the whole history: the cost grew with every step)."""

    def __init__(self) -> None:
        self._view: list[Message] = []
        self._digest: str | None = None

    def latest(self, view: Sequence[Message]) -> str | None:
        if extends(self._view, view):
            digest = announced_skills(view[len(self._view):]) or self._digest
        else:  # compacted or folded: the view changed, read it all again
            digest = announced_skills(view)
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
