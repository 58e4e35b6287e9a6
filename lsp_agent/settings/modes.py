"""Named modes: what a session may do, as a pair of approval policy and sandbox mode plus the kind of
work asked for. Both front ends switch modes from these tables: ACP's `session/set_mode` (acp/modes.py)
and the editor's `agent/mode`; neither keeps its own copy of what a mode means."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from lsp_agent.settings.config import Settings

Intent = Literal["agent", "plan", "ask"]
INTENTS: tuple[Intent, ...] = get_args(Intent)


@dataclass(frozen=True)
class Mode:
    id: str
    name: str
    description: str
    #: None keeps what the user configured (the editor's Agent mode changes nothing)
    approval: str | None
    sandbox: str | None
    intent: Intent = "agent"


#: Plan and Ask never ask for an approval: whatever would step outside the read-only sandbox is
#: refused, so neither mode can be talked into a write by an approval prompt.
PLAN = Mode("plan", "Plan", "reads and runs read-only commands only, then ends with a plan you can run in Agent mode",
            "never", "read-only", "plan")
ASK = Mode("ask", "Ask", "answers from reading the workspace: no edits, no commands", "never", "read-only", "ask")

#: ACP's modes: named pairs of the two policies doing the agent's work, then the editor's Plan and Ask.
ACP_MODES = (
    Mode("read-only", "Read only", "no edits: the edit tools refuse and commands run in a read-only sandbox; "
         "ask when a call steps outside it",
         "on-request", "read-only"),
    Mode("untrusted", "Ask before commands", "every command is approved first (workspace-write sandbox)",
         "untrusted", "workspace-write"),
    Mode("on-request", "Default", "sandboxed commands run; ask only when a call steps outside the sandbox",
         "on-request", "workspace-write"),
    Mode("on-failure", "Retry outside the sandbox", "as Default, and a command that failed in the sandbox may be "
         "re-run without it once approved", "on-failure", "workspace-write"),
    Mode("never", "Never ask", "never ask: what would need an approval is refused", "never", "workspace-write"),
    Mode("full-access", "Full access", "commands run WITHOUT a sandbox; ask as Default", "on-request",
         "danger-full-access"),
    PLAN,
    ASK,
)

#: The editor's modes.
EDITOR_MODES = (
    Mode("agent", "Agent", "edits files and runs commands under your approval and sandbox settings",
         None, None, "agent"),
    PLAN,
    ASK,
)


def by_id(table: tuple[Mode, ...]) -> dict[str, Mode]:
    return {m.id: m for m in table}


def current(settings: Settings, table: tuple[Mode, ...] = ACP_MODES) -> str:
    for mode in table:
        if mode.intent == settings.mode and mode.approval == settings.approval_policy \
                and mode.sandbox == settings.sandbox_mode:
            return mode.id
    return f"{settings.approval_policy}+{settings.sandbox_mode}"  # configured outside the named pairs


def apply(settings: Settings, mode: Mode) -> Settings:
    """`settings` under `mode`: its policies where it names them, the user's where it does not."""
    update: dict[str, object] = {"mode": mode.intent}
    if mode.approval is not None:
        update["approval_policy"] = mode.approval
    if mode.sandbox is not None:
        update["sandbox_mode"] = mode.sandbox
    return settings.model_copy(update=update)
