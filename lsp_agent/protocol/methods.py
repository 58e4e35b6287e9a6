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
# steering a running generation and the follow-up queue
AGENT_STEERING = "agent/steering"
AGENT_STEER = "agent/steer"
AGENT_STEER_PREFIX = "agent/steerPrefix"
AGENT_QUEUE_LIST = "agent/queue/list"
AGENT_QUEUE_ADD = "agent/queue/add"
AGENT_QUEUE_STEER = "agent/queue/steer"
AGENT_QUEUE_SEND_NOW = "agent/queue/sendNow"
AGENT_QUEUE_CANCEL = "agent/queue/cancel"
AGENT_QUEUE_EDIT = "agent/queue/edit"

# server → client notifications
AGENT_EVENT = "agent/event"
AGENT_RECEIPT = "agent/receipt"
AGENT_QUEUE_CHANGED = "agent/queueChanged"

# server → client requests
AGENT_SAVE_DOCUMENTS = "agent/saveDocuments"

# workspace/executeCommand commands (offered by code actions)
COMMAND_FIX_DIAGNOSTIC = "lsp-agent.fixDiagnostic"

#: `workspace/configuration` section and `didChangeConfiguration` settings key
CONFIG_SECTION = "lspAgent"

#: Diagnostic.source of every diagnostic this server publishes
DIAGNOSTIC_SOURCE = "lsp-agent"

CLIENT_REQUESTS = (AGENT_RUN, AGENT_CANCEL, AGENT_SESSIONS, AGENT_SESSION, AGENT_STATUS, AGENT_STEERING,
                   AGENT_STEER, AGENT_STEER_PREFIX, AGENT_QUEUE_LIST, AGENT_QUEUE_ADD, AGENT_QUEUE_STEER,
                   AGENT_QUEUE_SEND_NOW, AGENT_QUEUE_CANCEL, AGENT_QUEUE_EDIT)
SERVER_NOTIFICATIONS = (AGENT_EVENT, AGENT_RECEIPT, AGENT_QUEUE_CHANGED)
