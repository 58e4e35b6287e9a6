"""Checkpoints and rewind for every front end: the language server, the CLI (and next the ACP agent).

Resolves a session's messages from the store, asks the checkpoint store to restore the files, hands
files open in an editor back to the front end's own applier (a versioned buffer edit the user can
undo), and forks the conversation. Answers the wire models; refusals are `RewindError`s with a kind
the front ends map to their error codes.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from lsp_agent.app.rewind_verification import after_code_rewind, after_fork
from lsp_agent.checkpoints.blobs import BlobMissing
from lsp_agent.checkpoints.chain import Tree
from lsp_agent.checkpoints.restore import Op
from lsp_agent.checkpoints.rewind import RewindOutcome, RewindRefused, rewind
from lsp_agent.checkpoints.workspace import CheckpointUnavailable, WorkspaceCheckpoints
from lsp_agent.core.checkpoint_port import StepCheckpoints
from lsp_agent.core.lease import SessionLeases
from lsp_agent.core.session import Environment
from lsp_agent.core.session_fork import ForkRefused, fork_session
from lsp_agent.core.storage import Store
from lsp_agent.core.write_detect import snapshot
from lsp_agent.domain.edits import (
    DeleteFile,
    EditApplier,
    EditPlan,
    FileOp,
    Position,
    TextEdit,
    UpdateFile,
    position_at,
)
from lsp_agent.domain.history import Message, Role
from lsp_agent.protocol.checkpoint_models import CheckpointOut, CheckpointsResult, RewindParams, RewindResult

_KINDS = {"unknown_target": "unknown_message", "folded": "checkpoint_folded", "too_large": "checkpoint_unavailable"}


def _step_of(messages: list[Message], target: str) -> str:
    """The message a code rewind goes back to before. A tool message holds the results of the step
    the assistant message before it started: "before it" is before that step's effects (a front
    end's tool row names the message its result is stored in)."""
    at = next((i for i, m in enumerate(messages) if m.id == target), None)
    if at is None or messages[at].role is not Role.TOOL:
        return target
    for message in reversed(messages[:at]):
        if message.role is Role.ASSISTANT:
            return message.id
    return target


class RewindError(Exception):
    """`kind`: unknown_session, unknown_message, busy, checkpoint_folded, checkpoint_unavailable."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class RewindPorts:
    """What a rewind needs: the sessions, the checkpoints, and where edits of open files go."""

    store: Store
    checkpoints: StepCheckpoints | None
    applier: EditApplier

    @classmethod
    def of(cls, env: Environment) -> RewindPorts:
        return cls(env.store, env.checkpoints, env.applier)


class SessionRewind:
    def __init__(self, ports: RewindPorts) -> None:
        self.env = ports

    def _store(self) -> WorkspaceCheckpoints:
        found = self.env.checkpoints
        if not isinstance(found, WorkspaceCheckpoints):
            raise RewindError("checkpoint_unavailable", "checkpoints are not recorded here")
        return found

    def _messages(self, session_id: str) -> list[str]:
        if self.env.store.session(session_id) is None:
            raise RewindError("unknown_session", f"no session {session_id!r} in this workspace")
        return [m.id for m in self.env.store.messages(session_id)]

    def checkpoints(self, session_id: str) -> CheckpointsResult:
        self._messages(session_id)
        return CheckpointsResult(checkpoints=[
            CheckpointOut(id=r.id, message_id=r.message, step=r.step, tool=r.tool, phase=r.phase,
                          files=sorted({*r.changes, *r.expected}), outside=r.outside, when=r.when)
            for r in self._store().records(session_id)])

    async def rewind(self, params: RewindParams, open_text: Callable[[str], str | None] | None = None,
                     note: Callable[[str, list[str]], None] | None = None,
                     note_check: Callable[[str, list[str], str], None] | None = None,
                     announce: Callable[[str, str | None], None] | None = None) -> RewindResult:
        """`open_text`: the text of a path's open editor buffer (None: not open). `note(session, paths)`:
        tell a session these files changed under it (its reads and checks of them are stale).
        `note_check(session, paths, check)`: the same, where the files are now exactly the tree the
        check (a part id) passed on, so it stands again (without it such a rewind is noted as stale).
        `announce(path, sha256 | None)`: each disk write of the restore, before it happens."""
        ids = self._messages(params.session_id)
        # The session's lease, held for the rewind: a generation in another process (the editor, a
        # CLI run) holds it while it runs, so the files never change under a running step, and no run
        # starts while the files are being put back. A lease left by a dead process is taken over.
        with SessionLeases(self.env.store).held_briefly(params.session_id) as held:
            if not held:
                raise RewindError("busy", f"session {params.session_id} is running in another lsp-agent "
                                          "process; wait for it or cancel it, then rewind")
            return await self._rewind(params, ids, open_text, note, note_check, announce)

    async def _rewind(self, params: RewindParams, ids: list[str], open_text: Callable[[str], str | None] | None,
                      note: Callable[[str, list[str]], None] | None,
                      note_check: Callable[[str, list[str], str], None] | None,
                      announce: Callable[[str, str | None], None] | None) -> RewindResult:
        if params.restore != "code" and params.to_message_id not in ids:
            raise RewindError("unknown_message", f"message {params.to_message_id} is not in session "
                                                 f"{params.session_id} (a conversation is rewound to a message)")
        result = RewindResult(status="dry_run" if params.dry_run else "done", target="")
        outcome: RewindOutcome | None = None
        if params.restore in ("code", "both"):
            outcome = await self._code(params, ids, open_text, announce)
            result = self._code_result(params, outcome)
            if open_text is not None and not params.dry_run and outcome.editor_ops:
                await self._in_editor(outcome.editor_ops, open_text, result)
        if params.restore in ("conversation", "both") and not params.dry_run:
            try:
                result.session_id = fork_session(self.env.store, params.session_id, params.to_message_id)
            except ForkRefused as exc:
                raise RewindError(exc.kind, str(exc)) from exc
        if note is not None and outcome is not None and not params.dry_run:
            await self._recompute_verification(params, result, outcome, open_text, note, note_check)
        return result

    async def _recompute_verification(self, params: RewindParams, result: RewindResult, outcome: RewindOutcome,
                                      open_text: Callable[[str], str | None] | None,
                                      note: Callable[[str, list[str]], None],
                                      note_check: Callable[[str, list[str], str], None] | None) -> None:
        """A check stands only over the exact tree it ran on (see app/rewind_verification.py). Code
        alone: the restored files are a change under the session, unless they are exactly the tree
        of its latest passing check over them. Both: the fork's history ends where the tree was
        restored to, so only what differs from the tree its standing check saw is a change."""
        ws = self._store()
        now = self._files_now(ws, result, outcome)
        messages = self.env.store.messages(params.session_id)
        records = ws.records()
        if params.restore == "code":
            paths = sorted({*result.restored, *result.in_editor})
            if not paths:
                return
            check = after_code_rewind(messages, records, params.session_id, now)
            unseen = await self._unrecorded(ws, now, open_text, result.in_editor) if check is not None else []
            if check is not None and not unseen and note_check is not None:
                note_check(params.session_id, paths, check)
            else:
                note(params.session_id, sorted({*paths, *unseen}))
        elif result.session_id is not None:
            differ = after_fork(messages, params.to_message_id, records, params.session_id, now)
            if differ == []:
                differ = await self._unrecorded(ws, now, open_text, result.in_editor)
            note(result.session_id, sorted({*result.kept, *result.failed, *result.unrestorable, *(differ or [])}))

    @staticmethod
    async def _unrecorded(ws: WorkspaceCheckpoints, now: Tree, open_text: Callable[[str], str | None] | None,
                          restored_in_editor: list[str]) -> list[str]:
        """Where the files a check would see now differ from the recorded tree: changes on disk no
        checkpoint has seen yet (one stat walk; only what it finds changed is read), and open
        buffers holding unsaved text (a check saves them before it runs). The buffers this rewind
        just restored hold the target text (the editor may not have said so yet)."""
        walk = await asyncio.to_thread(snapshot, ws.root)
        if walk is None:
            return ["(the workspace is too large to compare)"]
        changed = sorted({p for p, _ in walk.items() ^ ws.stat.items()})
        found = await ws.changes(changed, None) if changed else {}
        out = {p for p, e in found.items() if e is None or e[0] != "ign"}
        for path, entry in now.items() if open_text is not None else ():
            text = open_text(path) if open_text is not None and path not in restored_in_editor else None
            if text is not None and entry[0] == "f" and hashlib.sha256(text.encode()).hexdigest() != entry[1]:
                out.add(path)
        return sorted(out)

    @staticmethod
    def _files_now(ws: WorkspaceCheckpoints, result: RewindResult, outcome: RewindOutcome) -> Tree:
        """The files as a check would now see them: the disk, with the buffers restored in the editor
        (a check saves open buffers before it runs)."""
        now = dict(ws.tree)
        for path in result.in_editor:
            entry = outcome.plan.then.get(path)
            if entry is None:
                now.pop(path, None)
            else:
                now[path] = entry
        return now

    async def _code(self, params: RewindParams, ids: list[str], open_text: Callable[[str], str | None] | None,
                    announce: Callable[[str, str | None], None] | None) -> RewindOutcome:
        def in_editor(path: str) -> bool:
            return open_text is not None and open_text(path) is not None
        target = _step_of(self.env.store.messages(params.session_id), params.to_message_id)
        try:
            return await rewind(self._store(), params.session_id, target, ids,
                                dry_run=params.dry_run, confirm=params.confirm, in_editor=in_editor,
                                announce=announce, buffer=open_text)
        except RewindRefused as exc:
            raise RewindError(_KINDS[exc.kind], str(exc)) from exc
        except (CheckpointUnavailable, BlobMissing, OSError) as exc:
            raise RewindError("checkpoint_unavailable", f"nothing was restored: {exc}") from exc

    @staticmethod
    def _code_result(params: RewindParams, outcome: RewindOutcome) -> RewindResult:
        plan = outcome.plan
        status = "dry_run" if params.dry_run else ("conflicts" if outcome.kept else "done")
        return RewindResult(status=status, target=plan.target, undo=outcome.checkpoint, restored=outcome.restored,
                            conflicts=plan.conflicts, kept=outcome.kept, unrestorable=plan.unrestorable,
                            failed=outcome.failed, diff=plan.diff)

    async def _in_editor(self, ops: list[Op], open_text: Callable[[str], str | None], result: RewindResult) -> None:
        """Open files through the front end's applier: one versioned edit, undoable in the editor."""
        store = self._store()
        plan_ops: list[FileOp] = []
        for op in ops:
            current = open_text(op.path)
            if current is None:
                continue
            if op.kind == "del":
                plan_ops.append(DeleteFile(path=op.path, base_text=current))
                continue
            if op.kind != "f":
                result.failed[op.path] = "open in the editor and restored as a symlink: close it and rewind again"
                continue
            try:
                text = store.blobs.get(op.ref).decode("utf-8")
            except (BlobMissing, UnicodeDecodeError) as exc:
                result.failed[op.path] = f"open in the editor and not text: close it and rewind again ({exc})"
                continue
            whole = TextEdit(start=Position(line=0, character=0), end=position_at(current, len(current)), new_text=text)
            plan_ops.append(UpdateFile(path=op.path, edits=[whole], base_text=current, new_text=text))
        if not plan_ops:
            return
        applied = await self.env.applier.apply(EditPlan(ops=plan_ops))
        paths = sorted(o.path for o in plan_ops)
        if applied.ok:
            result.in_editor = paths
        else:
            result.failed.update({p: f"the editor refused the edit: {applied.message}" for p in paths})
