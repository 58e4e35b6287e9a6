"""Discovery: the skills in `.lsp-agent/skills/*/SKILL.md` — promoted ones and hand-written ones.

The agent's instructions list them by name and description; the model reads one on demand
(read_skill). The list is part of the cached prompt prefix, so it is byte-stable: sorted by name,
built only from the files' contents, and rebuilt only when the folder changes. Change detection is
a cheap signature of the folder (names, mtimes, sizes, inodes) checked before each request; the
server's watcher (skills/watch.py) refreshes it as soon as watchfiles reports a change.

Links are never followed: a skills folder reached through a symlink lists nothing.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from lsp_agent.domain.skill_rules import MAX_NAME_CHARS, RuleFailed, check_name
from lsp_agent.skills.files import SKILL_FILE, SKILLS_PARTS, SKILLS_REL, directory, read_regular, skill_rel

log = logging.getLogger(__name__)

#: Skills listed in the instructions at most (the rest are counted, and listed by the CLI).
MAX_LISTED = 100
#: A description is cut to this many characters in the instructions.
MAX_LISTED_DESCRIPTION = 300
#: Bytes of a SKILL.md read to find its front matter.
FRONT_MATTER_BYTES = 16_384

Signature = tuple[tuple[str, int, int, int, int], ...]


@dataclass(frozen=True)
class SkillInfo:
    name: str  # the folder name (what read_skill takes)
    description: str
    path: str  # workspace-relative SKILL.md


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if raw.startswith('"'):
        try:
            value = json.loads(raw)
            return value if isinstance(value, str) else raw
        except ValueError:
            return raw.strip('"')
    if raw.startswith("'") and raw.endswith("'") and len(raw) >= 2:
        return raw[1:-1].replace("''", "'")
    return raw


def front_matter(text: str) -> dict[str, str]:
    """`key: value` pairs of a leading `---` block (the YAML subset skills use)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    found: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return found
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t")):
            found[key.strip()] = _scalar(value)
    return {}  # never closed: not front matter


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class SkillIndex:
    """The skills of one workspace; thread-safe (the watcher refreshes from its own thread)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._signature: Signature | None = None
        self._skills: list[SkillInfo] = []
        self._block = ""
        #: bumped whenever the list changes, whoever refreshed (the watcher reports by it)
        self.version = 0

    def _scan_signature(self) -> Signature:
        try:
            with directory(self.root, SKILLS_PARTS) as fd:
                if fd is None:
                    return ()
                entries: list[tuple[str, int, int, int, int]] = []
                with os.scandir(fd) as listing:
                    for entry in listing:
                        if len(entry.name) > MAX_NAME_CHARS or not entry.is_dir(follow_symlinks=False):
                            continue
                        try:
                            folder = entry.stat(follow_symlinks=False)
                            info = os.stat(f"{entry.name}/{SKILL_FILE}", dir_fd=fd, follow_symlinks=False)
                        except OSError:
                            continue
                        entries.append((entry.name, folder.st_mtime_ns, info.st_mtime_ns, info.st_size,
                                        info.st_ino))
                return tuple(sorted(entries))
        except (RuleFailed, OSError) as exc:
            log.info("skills folder not listed: %s", exc)
            return ()

    def refresh(self) -> bool:
        """Re-read the folder if it changed since the last look; True when the list changed."""
        with self._lock:  # scanning inside the lock: an older scan can never overwrite a newer one
            signature = self._scan_signature()
            if signature == self._signature:
                return False
            skills = [info for info in (self._load(e[0]) for e in signature) if info is not None]
            changed = skills != self._skills or self._signature is None
            self._signature = signature
            self._skills = skills
            self._block = _block(skills)
            if changed:
                self.version += 1
            return changed

    def _load(self, name: str) -> SkillInfo | None:
        try:
            check_name(name)
            with directory(self.root, (*SKILLS_PARTS, name)) as fd:
                if fd is None:
                    return None
                state, head = read_regular(fd, SKILL_FILE, limit=FRONT_MATTER_BYTES)
        except (RuleFailed, OSError):
            return None
        if not state.regular:
            return None
        meta = front_matter(head.decode("utf-8", "replace"))
        description = meta.get("description") or "(no description)"
        return SkillInfo(name=name, description=_one_line(description, MAX_LISTED_DESCRIPTION),
                         path=skill_rel(name))

    def skills(self) -> list[SkillInfo]:
        with self._lock:
            return list(self._skills)

    def find(self, name: str) -> SkillInfo | None:
        return next((s for s in self.skills() if s.name == name), None)

    def instructions_block(self) -> str:
        with self._lock:
            return self._block


def _block(skills: list[SkillInfo]) -> str:
    if not skills:
        return ""
    lines = ["", f"Skills: procedures verified in this repository ({SKILLS_REL}/). When the task matches one, "
                 "read it with read_skill (or read_file on its SKILL.md) and follow it."]
    lines += [f"- {s.name}: {s.description}" for s in skills[:MAX_LISTED]]
    if len(skills) > MAX_LISTED:
        lines.append(f"- … and {len(skills) - MAX_LISTED} more (list_dir {SKILLS_REL})")
    return "\n".join(lines) + "\n"


_INDEXES: dict[str, SkillIndex] = {}
_INDEXES_LOCK = threading.Lock()


def index_for(root: Path) -> SkillIndex:
    """The process-wide index of a workspace (the loop, read_skill and the server share it)."""
    key = str(root)
    with _INDEXES_LOCK:
        index = _INDEXES.get(key)
        if index is None:
            index = _INDEXES[key] = SkillIndex(root)
        return index


def skills_block(root: Path) -> str:
    """The instructions' skills section ("" without skills); stable until the folder changes."""
    index = index_for(root)
    index.refresh()
    return index.instructions_block()


class WorkspaceSkills:
    """The skills of one workspace, for the core's `SkillsSource` port."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def block(self) -> str:
        return skills_block(self.root)


def read_skill_text(root: Path, name: str, limit: int) -> tuple[str, bool] | None:
    """A skill's SKILL.md (cut to `limit` bytes: True when cut), or None when there is none."""
    with directory(root, (*SKILLS_PARTS, name)) as fd:
        if fd is None:
            return None
        state, data = read_regular(fd, SKILL_FILE, limit=limit + 1)
    if not state.exists or not state.regular:
        return None
    cut = len(data) > limit
    return data[:limit].decode("utf-8", "replace"), cut
