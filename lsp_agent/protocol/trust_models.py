"""`agent/workspaceTrust` and `agent/workspaceTrustChanged`: whether the user trusts the workspace's own
config (the settings that start processes, choose endpoints or keys, widen allow-lists, lift limits).

Untrusted, those settings are ignored and the agent works with the safe ones; the server never waits
for an answer. Trusting takes the hash the user was shown, so a file changed in between is never
trusted unseen (docs/security.md, "Workspace trust").
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lsp_agent.protocol.models import Params, Result

AGENT_WORKSPACE_TRUST = "agent/workspaceTrust"
AGENT_WORKSPACE_TRUST_CHANGED = "agent/workspaceTrustChanged"

TrustStateName = Literal["trusted", "untrusted", "changed", "nothing_to_trust"]


class WorkspaceTrustParams(Params):
    action: Literal["show", "trust", "revoke"] = Field(
        description="`show`: report the state; `trust`: trust exactly the content shown (`hash` required); "
                    "`revoke`: forget the trust (the gated settings are ignored again).")
    hash: str | None = Field(None, max_length=128,
                             description="With `trust`: the `hash` of the state the user was shown.")


class GatedSettingOut(Result):
    setting: str = Field(description="The dotted setting, e.g. `mcp.servers.evil`.")
    file: str = Field(description="The workspace-relative file that sets it.")
    effect: str = Field(description="What it would do, in the words the user should read before trusting.")


class WorkspaceTrustState(Result):
    root: str = Field(description="The workspace's real path (the key of the trust decision).")
    state: TrustStateName = Field(
        description="`trusted`; `untrusted`; `changed` (trusted before, the files changed since: asked again); "
                    "`nothing_to_trust` (no gated settings: nothing is ignored).")
    hash: str | None = Field(None, description="SHA-256 of the files below; what `trust` must send back.")
    files: list[str] = Field(description="Workspace-relative files the hash covers.")
    gated: list[GatedSettingOut] = Field(
        description="What is ignored while untrusted (what trusting would apply), in a stable order.")


METHOD_DOCS: tuple[tuple[str, Literal["request", "notification"], str, type[Params] | type[Result],
                         type[Result] | None, str], ...] = (
    (AGENT_WORKSPACE_TRUST, "request", "client → server", WorkspaceTrustParams, WorkspaceTrustState,
     "Show, grant or revoke the user's trust in the workspace's own `.lsp-agent/config.toml`. `trust` needs the "
     "`hash` of the state the user was shown; if the files changed since, InvalidParams (-32602) with `data.kind` "
     "`trust_changed` (show again). Trusting stores the decision in the user's state directory (never in the "
     "workspace) and reloads the settings, so the gated ones apply now (MCP servers start only now); `revoke` "
     "reloads them without. Returns the new state."),
    (AGENT_WORKSPACE_TRUST_CHANGED, "notification", "server → client", WorkspaceTrustState, None,
     "Sent after `initialized` when the workspace is `untrusted` or `changed` and `gated` is not empty, and again "
     "whenever its gated files change (a new hash). The client asks the user (then sends agent/workspaceTrust); "
     "the server never waits: until trusted, the gated settings are ignored and the agent works with the rest."),
)
