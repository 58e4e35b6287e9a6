"""Where a configured language server's program is: found before anything starts it, so a missing
one is named once (the eval's preflight, the CLI's start) instead of failing every query."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def resolve_program(name: str, path_env: str | None = None) -> str | None:
    """An absolute path for `name`: as given when it names a path; else on PATH; else next to the
    Python running lsp-agent (a virtual environment's tools, when its bin is not on PATH)."""
    if os.sep in name or (os.altsep and os.altsep in name):
        return name if os.access(name, os.X_OK) and Path(name).is_file() else None
    found = shutil.which(name, path=path_env if path_env is not None else os.environ.get("PATH", os.defpath))
    if found is not None:
        return found
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def missing_reason(command: list[str]) -> str:
    return (f"the language server program {command[0]!r} was not found (not on PATH, not next to "
            f"{Path(sys.executable).parent})")
