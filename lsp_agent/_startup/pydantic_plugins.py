"""pydantic without its plugin search, for the lsp-agent process: it costs peak RSS and start-up time.

When pydantic builds its first model it looks for plugins (the `pydantic` entry-point group): that
imports `importlib.metadata` (with email, zipfile, csv, tempfile, shutil, ...) and reads the metadata
of every installed distribution — ≈ 3.4 MB of RSS and ≈ 45 ms of CPU at each start. lsp-agent uses
no pydantic plugin (they instrument validation), so the CLI gives `pydantic.plugin._loader` a
stand-in before pydantic is imported: its `get_plugins()` finds none, as with
`PYDANTIC_DISABLE_PLUGINS=__all__`. Any other name asked of the stand-in loads the real loader, so
a pydantic that uses more of that module still works. Standard library only: nothing heavy here.
"""

from __future__ import annotations

import sys
import types

TYPE_CHECKING = False  # typing itself is not imported at run time (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["LOADER", "install"]

LOADER = "pydantic.plugin._loader"


def _get_plugins() -> Iterable[Any]:
    return ()


def _real(name: str) -> Any:
    if name.startswith("__"):  # the import system asks for __path__ and the like: not a loader name
        raise AttributeError(name)
    import importlib

    if getattr(sys.modules.get(LOADER), "lsp_agent_stand_in", False):
        del sys.modules[LOADER]
    return getattr(importlib.import_module(LOADER), name)


def install() -> bool:
    """Put the stand-in in place unless pydantic's loader is already imported; True if it was."""
    if LOADER in sys.modules:
        return False
    stand_in = types.ModuleType(LOADER, "lsp-agent: pydantic plugins are not searched for")
    stand_in.get_plugins = _get_plugins  # type: ignore[attr-defined]
    stand_in.lsp_agent_stand_in = True  # type: ignore[attr-defined]
    setattr(stand_in, "__getattr__", _real)  # noqa: B010  (PEP 562: names the stand-in lacks)
    sys.modules[LOADER] = stand_in
    return True
