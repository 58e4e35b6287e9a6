"""Params and results of `agent/checkpoints` and `agent/rewind`: take any step back.

A checkpoint is the workspace recorded just before (or after) a step that may write. Rewinding to a
message restores the state just before its effects — the files (`code`), the conversation (a fork
at that message, made current) or both. `toMessageID` may also name a checkpoint (`ckpt-…`), such as
the one a rewind returns to undo it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lsp_agent.protocol.models import Params, Result, SessionID

#: client → server requests
AGENT_CHECKPOINTS = "agent/checkpoints"
AGENT_REWIND = "agent/rewind"
CHECKPOINT_REQUESTS = (AGENT_CHECKPOINTS, AGENT_REWIND)


class CheckpointsParams(Params):
    session_id: SessionID = Field(description="The session whose checkpoints to list.")


class CheckpointOut(Result):
    id: str = Field(description="`ckpt-<n>`: what `agent/rewind` accepts as `toMessageID` to return to this tree.")
    message_id: str = Field(description="The model message whose step it belongs to (empty for a rewind).")
    step: int
    tool: str = Field(description="The tool of the step, or `rewind`.")
    phase: Literal["baseline", "before", "after"] = Field(
        description="baseline: the first record of the workspace; before: right before the step (changes "
                    "found then were made outside the agent); after: the step's own writes.")
    files: list[str] = Field(description="Workspace paths this checkpoint recorded a change of (on disk, or left "
                                         "unsaved in an editor buffer by the step's edit).")
    outside: list[str] = Field(description="Of `files`, those changed outside the agent.")
    when: float = Field(description="Seconds since the epoch.")


class CheckpointsResult(Result):
    checkpoints: list[CheckpointOut] = Field(description="Oldest first.")


class RewindParams(Params):
    session_id: SessionID
    to_message_id: str = Field(min_length=1, max_length=200,
                               description="A message of the session (`msg_…`: a user message means before the "
                                           "run it started; a model or tool message, before its step's effects), "
                                           "or a checkpoint (`ckpt-…`).")
    restore: Literal["code", "conversation", "both"] = Field(
        description="code: the files; conversation: fork the session before the message and make the fork "
                    "current; both.")
    dry_run: bool = Field(False, description="Change nothing; return the diff that would be applied.")
    confirm: bool = Field(False, description="Also restore files changed outside the agent since (conflicts).")


class RewindResult(Result):
    status: Literal["done", "dry_run", "conflicts"] = Field(
        description="conflicts: done, except the `conflicts` files, kept (send again with `confirm`).")
    target: str = Field(description="The checkpoint whose tree was restored (empty when nothing to restore).")
    undo: str = Field("", description="The checkpoint of the tree just before this rewind: rewind to it to undo.")
    restored: list[str] = Field(default_factory=list, description="Files restored on disk.")
    in_editor: list[str] = Field(default_factory=list,
                                 description="Open files restored through a versioned edit of their buffer (undo).")
    conflicts: list[str] = Field(default_factory=list, description="Files changed outside the agent since.")
    kept: list[str] = Field(default_factory=list, description="Conflicts left as they are (no `confirm`).")
    unrestorable: dict[str, str] = Field(default_factory=dict, description="Path → why it cannot be restored.")
    failed: dict[str, str] = Field(default_factory=dict, description="Path → why restoring it failed.")
    diff: str = Field("", description="Unified diff from the current files to the restored ones.")
    session_id: str | None = Field(None, description="With conversation/both: the fork, now the current session.")
