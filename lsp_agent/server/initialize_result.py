"""The `initialize` result server/boot.py sends before pygls is imported: computed here by pygls
from the registered routes, as `lsp_initialize` computes it, and kept in initialize_result.json.

    python -m lsp_agent.server.initialize_result          # rewrite the file after changing routes

tests/unit/test_boot.py fails while the file differs from what pygls computes.
"""

from __future__ import annotations

import json
from typing import Any

from lsprotocol import types
from pygls.capabilities import ServerCapabilitiesBuilder

from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.app import create_server
from lsp_agent.server.boot import RESULT_FILE


def compute(client: types.ClientCapabilities, server: AgentServer | None = None) -> dict[str, Any]:
    """What pygls answers `initialize` with for `client` (AgentProtocol.lsp_initialize: UTF-16)."""
    server = server or create_server()
    if client.general is not None:
        client.general.position_encodings = [types.PositionEncodingKind.Utf16]
    fm = server.protocol.fm
    capabilities = ServerCapabilitiesBuilder(
        client, set({**fm.features, **fm.builtin_features}.keys()), fm.feature_options, list(fm.commands.keys()),
        server._text_document_sync_kind, server._notebook_document_sync,
        ServerCapabilitiesBuilder.choose_position_encoding(client)).build()  # type: ignore[no-untyped-call]
    result = types.InitializeResult(capabilities=capabilities, server_info=server.protocol.server_info)
    plain: dict[str, Any] = json.loads(json.dumps(result, default=server.protocol._serialize_message))
    return plain


def render(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=1, sort_keys=True) + "\n"


def main() -> int:
    with open(RESULT_FILE, "w", encoding="utf-8") as file:
        file.write(render(compute(types.ClientCapabilities())))
    print(f"wrote {RESULT_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
