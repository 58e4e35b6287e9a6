"""Names of the custom JSON-RPC methods, notifications, commands and settings sections.

Every front end and every editor client spells them from here (or from docs/protocol.md,
which is generated from this package).
"""

from __future__ import annotations

# client → server requests
AGENT_RUN = "agent/run"
AGENT_CANCEL = "agent/cancel"
AGENT_SESSIONS = "agent/sessions"
AGENT_SESSION = "agent/session"
AGENT_STATUS = "agent/status"
#: reserved for the steering issue; clients may send it already and show the error if unsupported
AGENT_STEER = "agent/steer"

# server → client notifications
AGENT_EVENT = "agent/event"

# server → client requests
AGENT_SAVE_DOCUMENTS = "agent/saveDocuments"

# workspace/executeCommand commands (offered by code actions)
COMMAND_FIX_DIAGNOSTIC = "lsp-agent.fixDiagnostic"

#: `workspace/configuration` section and `didChangeConfiguration` settings key
CONFIG_SECTION = "lspAgent"

#: Diagnostic.source of every diagnostic this server publishes
DIAGNOSTIC_SOURCE = "lsp-agent"

CLIENT_REQUESTS = (AGENT_RUN, AGENT_CANCEL, AGENT_SESSIONS, AGENT_SESSION, AGENT_STATUS)
