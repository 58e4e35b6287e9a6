"""The editor extension and the server are released together: an extension speaks the protocol of
its own release. The extension sends its version at `initialize` (`initializationOptions.clientVersion`);
a server of another version says so once, with the fix, instead of failing later in a way that
looks like a bug. The key is not a setting, so it is taken out before the settings layer is read."""

from __future__ import annotations

import sys
from typing import Any

from lsp_agent._version import __version__

CLIENT_VERSION_KEY = "clientVersion"
_MAX_VERSION_CHARS = 64


def split_client_version(options: Any) -> tuple[str | None, Any]:
    """(the client's version if it sent a usable one, the settings layer without the key)."""
    if not isinstance(options, dict) or CLIENT_VERSION_KEY not in options:
        return None, options
    rest = {k: v for k, v in options.items() if k != CLIENT_VERSION_KEY}
    sent = options[CLIENT_VERSION_KEY]
    if not isinstance(sent, str) or not sent.strip() or len(sent) > _MAX_VERSION_CHARS:
        return None, rest
    return sent.strip(), rest


def server_version() -> str | None:
    """This server's version (the one constant, lsp_agent/_version.py)."""
    return __version__


def mismatch_message(client: str | None, server: str | None, python: str = sys.executable) -> str | None:
    """The warning for a client of another release, or None when they match (or one is unknown)."""
    if client is None or server is None or client.removeprefix("v") == server.removeprefix("v"):
        return None
    # The client's string goes into a message: keep it printable so it cannot forge lines.
    shown = "".join(c if c.isprintable() else "?" for c in client)
    # lsp-agent is not on the package index: naming it there would install whatever holds the name,
    # so the fix points at the release's own wheel.
    return (f"lsp-agent: the extension is {shown}, the server at {python} is {server}: update it "
            f"({python} -m pip install --upgrade ./lsp_agent-{shown}-py3-none-any.whl, the release's wheel) "
            f"or let the extension manage its environment")
