"""The checkpoints of one workspace: an append-only chain of deltas, one JSON line each.

The tree at a checkpoint is every delta up to and including it replayed in order, so a checkpoint
where one file changed costs one short line, not a manifest of the whole workspace. A line torn by
a crash is the last one and is ignored on load. Retention folds a dropped checkpoint's changes into
the next one (later changes win), so every kept checkpoint still replays to the same tree.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: (kind, ref, mode, size, mtime_ns, inode). kind: "f" a regular file (ref: its sha256), "l" a
#: symlink (ref: its target, never followed), "big" a file past the size limits (not copied, ref ""),
#: "ign" a path Git ignores (never restored nor deleted). An absent path is None.
Entry = tuple[str, str, int, int, int, int]
Tree = dict[str, Entry]


def stat_key(entry: Entry) -> tuple[int, int, int, int]:
    """The write detection's snapshot value for this entry: (size, mtime_ns, inode, mode)."""
    return (entry[3], entry[4], entry[5], entry[2])


def same_content(a: Entry | None, b: Entry | None) -> bool:
    """Equal for restoring: kind, content and the executable bit (times and inodes aside)."""
    if a is None or b is None:
        return a is b
    return a[0] == b[0] and a[1] == b[1] and (a[2] & 0o111) == (b[2] & 0o111)


@dataclass
class Record:
    seq: int
    session: str
    message: str
    step: int
    tool: str
    #: baseline: the first walk of the workspace; before: right before a step; after: the step's own writes
    phase: str
    when: float
    changes: dict[str, Entry | None] = field(default_factory=dict)
    #: the paths in `changes` that someone else changed (found before a step, not written by it)
    outside: list[str] = field(default_factory=list)
    #: messages whose checkpoints retention folded into this one (their own state is no longer kept)
    folded: list[str] = field(default_factory=list)
    #: paths an edit tool of this step wrote, changed on disk or not (in an editor, an unsaved buffer)
    touched: list[str] = field(default_factory=list)
    #: what the step left in editor buffers, by path: the sha256 of the text (None: the file deleted).
    #: The disk may catch up later, when the editor saves: a save of exactly this is the agent's change.
    expected: dict[str, str | None] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"ckpt-{self.seq}"

    def to_line(self) -> str:
        return json.dumps({"seq": self.seq, "session": self.session, "message": self.message, "step": self.step,
                           "tool": self.tool, "phase": self.phase, "when": self.when,
                           "changes": {p: list(e) if e is not None else None for p, e in self.changes.items()},
                           "outside": self.outside, "folded": self.folded, "touched": self.touched,
                           **({"expected": self.expected} if self.expected else {})},
                          separators=(",", ":")) + "\n"

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Record:
        changes: dict[str, Entry | None] = {
            str(p): (str(e[0]), str(e[1]), int(e[2]), int(e[3]), int(e[4]), int(e[5])) if e is not None else None
            for p, e in raw["changes"].items()}
        return cls(int(raw["seq"]), str(raw["session"]), str(raw["message"]), int(raw["step"]), str(raw["tool"]),
                   str(raw["phase"]), float(raw["when"]), changes, [str(p) for p in raw.get("outside", [])],
                   [str(m) for m in raw.get("folded", [])], [str(p) for p in raw.get("touched", [])],
                   {str(p): str(d) if d is not None else None for p, d in raw.get("expected", {}).items()})


def content_key(entry: Entry) -> tuple[str, str, int] | None:
    """What a check can tell apart in an entry (kind, content, executable bit); None: Git ignores it.
    A file too large to copy has no digest: its size and mtime stand in (a change is never missed)."""
    if entry[0] == "ign":
        return None
    if entry[0] == "big":
        return ("big", f"{entry[3]}:{entry[4]}", entry[2] & 0o111)
    return (entry[0], entry[1], entry[2] & 0o111)


def tree_changes(a: Tree, b: Tree) -> list[str]:
    """The paths whose content differs between two trees (Git-ignored paths aside), sorted."""
    return sorted(p for p in a.keys() | b.keys()
                  if (content_key(a[p]) if p in a else None) != (content_key(b[p]) if p in b else None))


def matches(entry: Entry | None, expected: str | None) -> bool:
    """Whether a path's entry holds what an agent's edit left for it (None: the file gone)."""
    if expected is None:
        return entry is None
    return entry is not None and entry[0] == "f" and entry[1] == expected


def awaited(records: Iterable[Record], pending: dict[str, str | None] | None = None) -> dict[str, str | None]:
    """The agent's edits not yet seen on disk after these records, by path: an expectation lasts until
    the path is next recorded changed, with that content (the agent's save) or another (someone else's)."""
    out = dict(pending or {})
    for record in records:
        for path in record.changes:
            out.pop(path, None)
        for path, digest in record.expected.items():
            if not matches(record.changes.get(path, _UNCHANGED), digest):
                out[path] = digest
    return out


#: stands for "not in this record's changes" (an absent file is None)
_UNCHANGED: Entry = ("", "", 0, 0, 0, 0)


def as_left(tree: Tree, pending: dict[str, str | None], stored: Callable[[str], bool]) -> Tree:
    """The tree with the agent's edits an editor still held unsaved (those whose text is stored):
    what the user saw, and what a rewind to this point puts back."""
    out = dict(tree)
    for path, digest in pending.items():
        if digest is None:
            out.pop(path, None)
        elif stored(digest):
            old = out.get(path)
            mode = old[2] if old is not None and old[0] == "f" else 0o100644
            out[path] = ("f", digest, mode, 0, 0, 0)
    return out


def replay(records: Iterable[Record], tree: Tree | None = None) -> Tree:
    out: Tree = dict(tree or {})
    for record in records:
        for path, entry in record.changes.items():
            if entry is None:
                out.pop(path, None)
            else:
                out[path] = entry
    return out


class Chain:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: list[Record] = self._load()

    def _load(self) -> list[Record]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        records: list[Record] = []
        good = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                records.append(Record.from_json(json.loads(line)))
            except (ValueError, KeyError, TypeError, IndexError):
                break
            good += len(line)
        if good < len(data):
            # a line torn by a crash ends the chain; cut it, or the next append would be glued to it
            os.truncate(self.path, good)
        return records

    def next_seq(self) -> int:
        return self.records[-1].seq + 1 if self.records else 1

    def append(self, record: Record) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, record.to_line().encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        self.records.append(record)

    def rewrite(self, records: list[Record]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            out.writelines(r.to_line() for r in records)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)
        self.records = records

    def digests(self) -> set[str]:
        return {e[1] for r in self.records for e in r.changes.values() if e is not None and e[0] == "f"} | \
            {d for r in self.records for d in r.expected.values() if d is not None}


def fold(records: list[Record], per_session: int, total: int) -> list[Record]:
    """The records kept under the retention limits; each dropped one folded into its successor.
    The newest record is always kept (it holds the current tree)."""
    drop: set[int] = set()
    by_session: dict[str, list[int]] = {}
    for index, record in enumerate(records):
        by_session.setdefault(record.session, []).append(index)
    for indexes in by_session.values():
        drop.update(indexes[:max(0, len(indexes) - per_session)])
    kept_count = len(records) - len(drop)
    for index in range(len(records)):
        if kept_count <= total:
            break
        if index not in drop:
            drop.add(index)
            kept_count -= 1
    drop.discard(len(records) - 1)
    if not drop:
        return records
    out: list[Record] = []
    carry: Record | None = None
    for index, record in enumerate(records):
        if carry is not None:
            record = _merge(carry, record)
            carry = None
        if index in drop:
            carry = record
        else:
            out.append(record)
    return out


def _merge(earlier: Record, later: Record) -> Record:
    changes = {**earlier.changes, **later.changes}
    outside = sorted({p for p in earlier.outside if p not in later.changes} | set(later.outside))
    folded = [*earlier.folded, earlier.message, *later.folded]
    touched = sorted({*earlier.touched, *later.touched})
    expected = {**{p: d for p, d in earlier.expected.items() if p not in later.changes}, **later.expected}
    return Record(later.seq, later.session, later.message, later.step, later.tool, later.phase, later.when,
                  changes, outside, list(dict.fromkeys(folded)), touched, expected)
