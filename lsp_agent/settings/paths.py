"""Where the local store lives: the user's state directory, keyed by workspace.

Never inside the workspace, so the agent's own records never dirty the git tree.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path


def state_dir() -> Path:
    override = os.environ.get("LSP_AGENT_STATE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "lsp-agent"


def workspace_dir(root: Path) -> Path:
    real = str(root.resolve())
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(real).name)[:40] or "root"
    key = hashlib.sha256(real.encode()).hexdigest()[:12]
    return state_dir() / "workspaces" / f"{slug}-{key}"
