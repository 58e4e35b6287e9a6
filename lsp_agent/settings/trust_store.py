"""The user's trust decisions: which workspace (by real path) is trusted with which content (by hash).

Stored in the user's state directory (settings/paths.py), never in the workspace, so nothing the
repository or a sandboxed command writes can grant trust: the sandbox hides $HOME and the state
directory with it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from lsp_agent.osfiles.regular import read_regular_text
from lsp_agent.settings.paths import workspace_dir

_FILE = "trust.json"


def _path(real_root: Path) -> Path:
    return workspace_dir(real_root) / _FILE


def trusted_hash(real_root: Path) -> str | None:
    """The hash the user trusted for this workspace, or None (never trusted, or revoked)."""
    path = _path(real_root)
    if path.resolve().is_relative_to(real_root):
        # A state directory inside the workspace (LSP_AGENT_STATE_DIR=./state) is writable by the
        # repository and the model's commands: a decision found there is nobody's.
        return None
    try:
        record = json.loads(read_regular_text(path, 64 * 1024))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("root") != str(real_root):
        return None  # a record of another path that hashed to the same directory name
    found = record.get("hash")
    return found if isinstance(found, str) else None


def remember(real_root: Path, content_hash: str) -> None:
    """Trust this workspace with exactly this content (replacing an earlier decision)."""
    target = _path(real_root)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".trust-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"root": str(real_root), "hash": content_hash}, out)
        os.replace(tmp, target)  # readers see the old decision or the new one, never half of one
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def forget(real_root: Path) -> None:
    _path(real_root).unlink(missing_ok=True)
