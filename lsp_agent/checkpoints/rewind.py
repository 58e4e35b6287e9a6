"""Rewinding a workspace's files to a checkpoint: the plan (what changes, what conflicts, the diff)
and its crash-safe application, itself checkpointed so that a rewind can be rewound.

"To a message" means the state just before that message's effects: the first checkpoint of the
session recorded at or after the message (for a user message, before the first write of the run it
started). A file someone else changed since that checkpoint is a conflict: listed, and kept unless
the caller confirms.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Callable
from dataclasses import dataclass, field

from lsp_agent.checkpoints.blobs import BlobMissing
from lsp_agent.checkpoints.chain import Entry, Record, Tree, as_left, awaited, replay, same_content
from lsp_agent.checkpoints.restore import Op, apply
from lsp_agent.checkpoints.workspace import WorkspaceCheckpoints
from lsp_agent.core.checkpoint_port import StepRef
from lsp_agent.core.write_detect import snapshot
from lsp_agent.domain.edits import digest


class RewindRefused(LookupError):
    """The target cannot be rewound to. `kind`: unknown_target, folded, too_large."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind


@dataclass
class RewindPlan:
    #: the checkpoint whose tree is restored ("" when no step wrote after the target: nothing to do)
    target: str
    #: paths put back (created, rewritten or deleted), sorted
    restore: list[str] = field(default_factory=list)
    #: paths changed outside the agent since the target: kept unless confirmed
    conflicts: list[str] = field(default_factory=list)
    #: paths that cannot be put back, with why (too large to have been copied)
    unrestorable: dict[str, str] = field(default_factory=dict)
    #: the unified diff from the current files to the restored ones (restore and conflicts)
    diff: str = ""
    ops: list[Op] = field(default_factory=list)
    conflict_ops: list[Op] = field(default_factory=list)
    #: the tree restored to, and the paths the agent's edit tools wrote since (an open buffer's
    #: unsaved edits are not on disk: the caller compares those buffers with this tree)
    then: Tree = field(default_factory=dict)
    touched_since: set[str] = field(default_factory=set)


@dataclass
class RewindOutcome:
    plan: RewindPlan
    #: the checkpoint of the tree just before this rewind: rewinding to it undoes the rewind
    checkpoint: str
    restored: list[str]
    kept: list[str]
    failed: dict[str, str]
    #: ops left to the caller: files open in an editor, restored through their buffers (with undo)
    editor_ops: list[Op] = field(default_factory=list)


def target_index(records: list[Record], session: str, target: str, message_ids: list[str]) -> int | None:
    """Index in `records` of the checkpoint whose tree a target names; None: no step of the session
    ever wrote (nothing to restore)."""
    if target.startswith("ckpt-"):
        for index, record in enumerate(records):
            if record.id == target:
                return index
        raise RewindRefused("unknown_target", f"no checkpoint {target} is kept for this workspace")
    order = {m: i for i, m in enumerate(message_ids)}
    if target not in order:
        raise RewindRefused("unknown_target", f"message {target} is not in session {session}")
    at = order[target]
    last_before: int | None = None
    for index, record in enumerate(records):
        if record.session != session and record.phase != "baseline":
            continue
        lost = [m for m in record.folded if order.get(m, -1) >= at]
        if lost:
            raise RewindRefused("folded", f"the checkpoint before message {target} was folded by retention "
                                          "(checkpoints.per_session / total / total_bytes); the oldest kept is "
                                          f"{record.id}")
        position = order.get(record.message, -1)
        if position >= at:
            return index
        if position >= 0:
            last_before = index
    # No step wrote at or after the message: its tree is the one the last step before it left
    # (what a later rewind or an outside edit changed since is put back, or is a conflict).
    return last_before


def plan(records: list[Record], index: int | None, now: Tree, outside_now: set[str],
         read: Callable[[str], bytes], buffer: Callable[[str], str | None] | None = None,
         stored: Callable[[str], bool] = lambda _digest: False) -> RewindPlan:
    """`buffer(path)`: the text of the path's open editor buffer (None: not open); the diff starts
    from it, as the restore will (an open file is restored through its buffer). `stored(digest)`:
    whether the store holds that content (an unsaved edit's text is put back only then)."""
    if index is None:
        return RewindPlan(target="")
    kept = records[:index + 1]
    then = as_left(replay(kept), awaited(kept), stored)
    outside = set(outside_now).union(*(r.outside for r in records[index + 1:]))
    out = RewindPlan(target=records[index].id, then=then,
                     touched_since=set().union(*(r.touched for r in records[index + 1:])))
    diffs: list[str] = []
    for path in sorted(then.keys() | now.keys()):
        old, new = now.get(path), then.get(path)
        if (old is not None and old[0] == "ign") or (new is not None and new[0] == "ign") or same_content(old, new):
            continue
        if _shows(buffer, path, new):
            continue  # the editor already holds that text (its save is on its way): nothing to put back
        if (old is not None and old[0] == "big") or (new is not None and new[0] == "big"):
            out.unrestorable[path] = "too large to be kept in a checkpoint (checkpoints.file_bytes)"
            continue
        op = _op(path, new)
        if path in outside:
            out.conflicts.append(path)
            out.conflict_ops.append(op)
        else:
            out.restore.append(path)
            out.ops.append(op)
        diffs.append(_diff(path, old, new, read, buffer(path) if buffer is not None else None))
    for path in sorted(out.touched_since - {*out.restore, *out.conflicts, *out.unrestorable}):
        # an agent edit an open buffer holds unsaved: the disk matches the target, the buffer does not
        text = buffer(path) if buffer is not None else None
        entry = then.get(path)
        if text is not None and entry is not None and entry[0] == "f":
            diffs.append(_diff(path, entry, entry, read, text))
    out.diff = "".join(diffs)
    return out


def _shows(buffer: Callable[[str], str | None] | None, path: str, entry: Entry | None) -> bool:
    """Whether the path's open buffer holds exactly the entry's text."""
    text = buffer(path) if buffer is not None else None
    return text is not None and entry is not None and entry[0] == "f" and digest(text) == entry[1]


def unsaved_edits(found: RewindPlan, buffer: Callable[[str], str | None] | None) -> list[Op]:
    """Open buffers the agent edited since the target whose edits never reached the disk: the disk
    already matches the target, the buffer does not (put back through the buffer)."""
    ops: list[Op] = []
    for path in sorted(found.touched_since - {*found.restore, *found.conflicts, *found.unrestorable}):
        entry = found.then.get(path)
        text = buffer(path) if buffer is not None else None
        if text is not None and entry is not None and entry[0] == "f" and digest(text) != entry[1]:
            ops.append(Op(path, "f", entry[1], entry[2]))
    return ops


def _op(path: str, entry: Entry | None) -> Op:
    if entry is None:
        return Op(path, "del")
    return Op(path, entry[0], entry[1], entry[2])


def _text(entry: Entry | None, read: Callable[[str], bytes]) -> list[str] | None:
    if entry is None:
        return []
    if entry[0] == "l":
        return [f"symlink -> {entry[1]}\n"]
    data = read(entry[1])
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace").splitlines(keepends=True)


def _diff(path: str, old: Entry | None, new: Entry | None, read: Callable[[str], bytes],
          held: str | None = None) -> str:
    """`held`: the text an editor buffer holds for the path, compared instead of the disk."""
    try:
        before = held.splitlines(keepends=True) if held is not None else _text(old, read)
        after = _text(new, read)
    except BlobMissing as exc:
        return f"--- a/{path}\n+++ b/{path}\n(cannot show: {exc})\n"
    if before is None or after is None:
        return f"Binary files a/{path} and b/{path} differ\n"
    lines = list(difflib.unified_diff(before, after, f"a/{path}" if old else "/dev/null",
                                      f"b/{path}" if new else "/dev/null"))
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


async def rewind(ws: WorkspaceCheckpoints, session: str, target: str, message_ids: list[str], *,
                 dry_run: bool, confirm: bool, on_op: Callable[[int], None] | None = None,
                 in_editor: Callable[[str], bool] | None = None,
                 announce: Callable[[str, str | None], None] | None = None,
                 buffer: Callable[[str], str | None] | None = None) -> RewindOutcome:
    """The workspace's files as they were at `target` (a message of `session` or a checkpoint id).
    `in_editor`: paths the caller restores itself (open buffers); they are returned, not written.
    `announce(path, sha256 or None for absent)`: told of each file write before it happens (a file
    watcher then knows these writes for the agent's own, by their content). `buffer(path)`: an open
    buffer's text, which the diff starts from."""
    async with ws.lock:
        records = ws.records()
        index = target_index(records, session, target, message_ids)
        # Without `confirm` only the paths recorded as changed since the target can be restored (an
        # unrecorded outside change would be a kept conflict anyway): look at those, not the whole
        # tree. With it, the whole tree is walked, so outside changes the chain has not seen yet go too.
        paths: list[str] | None = None
        walk = None
        if index is None:
            paths = []  # no step of the session wrote: nothing to restore
        elif confirm:
            walk = await asyncio.to_thread(snapshot, ws.root)
            if walk is None:
                raise RewindRefused("too_large", "the workspace is too large to walk; nothing was restored")
        else:
            paths = sorted(set().union(*(r.changes.keys() for r in records[index + 1:]),
                                       *(r.touched for r in records[index + 1:])))
        ref = StepRef(session, "", 0, "rewind")
        if dry_run:
            changes = await ws.changes(paths, walk)
            now = {p: e for p, e in replay([Record(0, "", "", 0, "", "", 0.0, changes)], ws.tree).items()}
            outside = set(ws.outside(changes))  # as the real rewind's checkpoint below finds them
            found = plan(ws.records(), index, now, outside, ws.blobs.get, buffer, ws.blobs.has)
            return RewindOutcome(found, "", [], [], {})
        before = await ws.record_unlocked(ref, paths, walk, "before")
        records = ws.records()  # read again: retention may have folded the chain while recording
        index = target_index(records, session, target, message_ids)
        found = plan(records, index, ws.tree, set(before.outside), ws.blobs.get, buffer, ws.blobs.has)
        chosen = found.ops + (found.conflict_ops if confirm else [])
        editor_ops = [o for o in chosen if in_editor is not None and in_editor(o.path)]
        editor_ops += [o for o in unsaved_edits(found, buffer) if in_editor is not None and in_editor(o.path)]
        ops = [o for o in chosen if o not in editor_ops]
        if announce is not None:
            for op in ops:
                if op.kind in ("f", "del"):  # a symlink has no content digest: it shows as an outside change
                    announce(op.path, op.ref if op.kind == "f" else None)
        failed = await asyncio.to_thread(apply, ws.root, ws.blobs, ops, ws.journal, on_op) if ops else {}
        # The open files go back through their buffers after this: the editor saves them later, and
        # those saves of exactly the restored content are this rewind's, not someone else's.
        left = {o.path: o.ref if o.kind == "f" else None for o in editor_ops if o.kind in ("f", "del")}
        await ws.record_unlocked(ref, [o.path for o in ops] + sorted(left), None, "after", left)
        restored = sorted(o.path for o in ops if o.path not in failed)
        kept = [] if confirm else list(found.conflicts)
        return RewindOutcome(found, before.id, restored, kept, failed, editor_ops)
