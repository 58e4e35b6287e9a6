"""httpx without its command-line client.

httpx's package `__init__` imports its command-line client (click, rich, pygments: ≈ 5 MB of RSS
and tens of milliseconds) whenever those happen to be installed; lsp-agent never runs it, so
`httpx._main` is given a stand-in before httpx is first imported. Every module of the providers
takes httpx from here.
"""

from __future__ import annotations

import sys
import types

__all__ = ["httpx"]


def _without_cli() -> None:
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    stand_in = types.ModuleType("httpx._main")

    def main() -> None:
        raise SystemExit("the httpx command line is not available inside lsp-agent")

    stand_in.main = main  # type: ignore[attr-defined]
    sys.modules["httpx._main"] = stand_in


_without_cli()

import httpx  # noqa: E402  (after the stand-in)
