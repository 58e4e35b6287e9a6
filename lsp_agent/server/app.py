"""The language server assembled: the route modules installed on an `AgentServer`, served over
stdio or TCP. The route modules take `AgentServer` from server/agent_server.py; this module alone
imports them all.
"""

from __future__ import annotations

import importlib
import os
import sys

from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.framing import TransportLimits
from lsp_agent.server.transport import serve_stdio, serve_tcp

HANDLER_MODULES = ("checkpoint_methods", "context_methods", "lifecycle", "mcp_methods", "methods", "model_methods",
                   "rpc", "skill_methods", "steering_methods", "trust_methods")


def import_handlers() -> None:
    """Import what `create_server` needs (server/boot.py does it on a thread, ahead of time)."""
    for name in HANDLER_MODULES:
        importlib.import_module(f"lsp_agent.server.{name}")


def create_server() -> AgentServer:
    # Imported when the first server is built (server/boot.py imports them on a thread ahead of time).
    from lsp_agent.server import (
        checkpoint_methods,
        context_methods,
        lifecycle,
        mcp_methods,
        methods,
        model_methods,
        skill_methods,
        steering_methods,
        trust_methods,
    )
    from lsp_agent.server.rpc import install

    server = AgentServer()
    install(server, lifecycle.routes, methods.routes, steering_methods.routes, skill_methods.routes,
            context_methods.routes, mcp_methods.routes, trust_methods.routes, model_methods.routes,
            checkpoint_methods.routes)
    server.lifecycle.participants.append(skill_methods.SkillWatch())
    server.lifecycle.participants.append(trust_methods.TrustWatch())
    server.lifecycle.code_actions.append(skill_methods.skill_actions)
    return server


def serve(tcp: str | None = None, limits: TransportLimits | None = None) -> int:
    """Serve without the early `initialize` answer (TCP; stdio where server/boot.py cannot)."""
    server = create_server()
    if tcp:
        host, _, port = tcp.rpartition(":")
        serve_tcp(server, host or "127.0.0.1", int(port), limits or TransportLimits())
        return 0
    # The protocol keeps the real stdout; fd 1 then points at stderr, so a stray print or a child
    # process that inherits stdout can never corrupt the stream.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    serve_stdio(server, sys.stdin.buffer, protocol_out, limits or TransportLimits())
    return 0
