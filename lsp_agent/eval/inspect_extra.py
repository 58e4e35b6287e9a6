"""The optional Inspect AI extra: what to say when it is not installed.

Inspect AI is large and only some operators want it, so lsp-agent works without it; the modules
that need it raise `InspectMissing` at import time, which names the extra to install.
"""

from __future__ import annotations

INSTALL_HINT = "pip install 'lsp-agent[inspect]'"


class InspectMissing(ImportError):
    """`inspect_ai` cannot be imported."""

    def __init__(self, cause: ImportError) -> None:
        super().__init__(f"this needs Inspect AI, the optional `inspect` extra: {INSTALL_HINT} "
                         f"(import failed: {cause})")
