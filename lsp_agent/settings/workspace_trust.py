"""Workspace trust: what a repository's own config would do, and whether the user trusted exactly that.

The files are read once (never blocking on a FIFO the repository put there), hashed, and parsed
from the same bytes, so what applies is what the user trusted. A file that changed since — edited
by hand, pulled, or written by a command the model ran — has another hash: the workspace is
`changed`, its gated settings are ignored again until the user trusts the new content.

Front ends use `config.inspect_workspace` (it knows the never-list and the defaults), then
`trust` / `revoke` here.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lsp_agent.osfiles.regular import read_regular_bytes
from lsp_agent.settings import trust_store
from lsp_agent.settings.workspace_gate import Gated, split

CONFIG_FILE = ".lsp-agent/config.toml"
#: Every workspace file whose content can start a process, choose an endpoint or a key, widen an
#: allow-list, lift a limit or change approvals. Skills and instruction files are not here: they
#: reach the model only as text (docs/security.md, "Workspace trust").
TRUST_FILES = (CONFIG_FILE,)
MAX_CONFIG_BYTES = 1_000_000

State = Literal["trusted", "untrusted", "changed", "nothing_to_trust"]


class TrustChanged(Exception):
    """The files changed between showing them to the user and the user's answer."""


@dataclass(frozen=True)
class WorkspaceView:
    root: Path  # the real path, the key of the trust decision
    state: State
    hash: str | None
    files: list[str]
    gated: list[Gated]
    refused: list[str] = field(default_factory=list)  # set in the workspace, never applied from one
    layer: dict[str, Any] = field(default_factory=dict)  # the workspace layer that applies now
    error: str | None = None  # the config cannot be used at all (unreadable, not TOML)
    #: the editor itself does not trust the folder (VS Code's Restricted Mode): a trust the user
    #: stored earlier, from another front end, does not apply in this session
    editor_distrusts: bool = False

    @property
    def ignored(self) -> bool:
        """Gated settings are being ignored right now."""
        return self.state in ("untrusted", "changed") and bool(self.gated)


def _read(root: Path) -> tuple[dict[str, bytes], str | None]:
    found: dict[str, bytes] = {}
    for rel in TRUST_FILES:
        try:
            data = read_regular_bytes(root / rel, MAX_CONFIG_BYTES)
        except FileNotFoundError:
            continue
        except OSError as exc:  # a FIFO, a directory, a dangling link, no permission: not used
            return found, f"{rel}: {exc}"
        if len(data) > MAX_CONFIG_BYTES:
            return found, f"{rel}: larger than {MAX_CONFIG_BYTES} bytes"
        found[rel] = data
    return found, None


def content_hash(files: Mapping[str, bytes]) -> str | None:
    if not files:
        return None
    digest = hashlib.sha256()
    for rel in sorted(files):
        data = files[rel]
        digest.update(f"{rel}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def inspect(root: Path, *, never: Iterable[str], limit_defaults: Mapping[str, Any],
            max_steps_default: int, editor_distrusts: bool = False) -> WorkspaceView:
    real = root.resolve()
    files, error = _read(real)
    digest = content_hash(files)
    raw: dict[str, Any] = {}
    if error is None and CONFIG_FILE in files:
        try:
            raw = tomllib.loads(files[CONFIG_FILE].decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            error = f"{real / CONFIG_FILE}: {exc}"
    if error is not None:
        return WorkspaceView(real, "nothing_to_trust", digest, sorted(files), [], error=error)
    parts = split(raw, never=never, limit_defaults=limit_defaults, max_steps_default=max_steps_default)
    stored = None if editor_distrusts else trust_store.trusted_hash(real)
    state: State
    if not parts.gated:
        state = "nothing_to_trust"
    elif digest is not None and stored == digest:
        state = "trusted"
    else:
        state = "untrusted" if stored is None else "changed"
    layer = parts.trusted if state == "trusted" else parts.safe
    return WorkspaceView(real, state, digest, sorted(files), parts.gated, parts.refused, layer,
                         editor_distrusts=editor_distrusts)


def trust(view: WorkspaceView, shown_hash: str | None) -> None:
    """Trust the workspace with the content the user was shown; TrustChanged if it changed since."""
    if shown_hash is None or view.hash != shown_hash:
        raise TrustChanged(f"the workspace's settings files changed since they were shown "
                           f"({', '.join(TRUST_FILES)}): show them again before trusting")
    trust_store.remember(view.root, shown_hash)


def revoke(root: Path) -> None:
    trust_store.forget(root.resolve())


#: How each front end's user reviews and applies the gated settings (the end of `ignored_line`).
HOW_TO_TRUST = {
    "cli": "review and apply with `lsp-agent trust`",
    "editor": "review and apply with \"LSP Agent: Manage Workspace Trust\" (VS Code), :LspAgentTrust (Neovim) "
              "or `lsp-agent trust`",
    "acp": "review and apply with `lsp-agent trust`, or answer the agent's trust question",
}


def ignored_line(view: WorkspaceView, how_to_trust: str) -> str | None:
    """One line naming what is ignored and how to apply it, or None when nothing is."""
    if not view.ignored and not view.refused:
        return None
    parts: list[str] = []
    if view.ignored:
        why = ("not trusted by the editor (Restricted Mode)" if view.editor_distrusts
               else "changed since you trusted it" if view.state == "changed" else "not trusted")
        names = ", ".join(g.setting for g in view.gated)
        parts.append(f"{CONFIG_FILE} is {why}; ignored: {names} ({how_to_trust})")
    if view.refused:
        parts.append(f"never applied from a workspace config: {', '.join(view.refused)}")
    return "lsp-agent: " + "; ".join(parts)
