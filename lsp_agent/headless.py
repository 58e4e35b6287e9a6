"""The headless front end: the same core on disk ports, for the CLI, eval and CI."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsp_agent.config import Settings
from lsp_agent.core.disk_applier import DiskApplier
from lsp_agent.core.disk_documents import DiskDocuments
from lsp_agent.core.events import RunFinish
from lsp_agent.core.loop import Generation
from lsp_agent.core.ports import EventSink, Provider, ProviderError
from lsp_agent.core.session import AgentSession, Environment, ModelFacts
from lsp_agent.store.db import Store
from lsp_agent.store.paths import workspace_dir
from lsp_agent.tools.defaults import default_registry

if TYPE_CHECKING:
    from lsp_agent.mcp.manager import McpManager


def make_provider(settings: Settings, base_url: str | None = None, wire: str | None = None) -> Provider:
    from lsp_agent.providers.registry import build_provider

    return build_provider(settings, settings.model, base_url=base_url, wire=wire)


def model_facts(settings: Settings, wire: str | None = None) -> ModelFacts:
    from lsp_agent.providers.registry import resolve_model

    try:
        resolved = resolve_model(settings, settings.model)
    except ProviderError:
        return ModelFacts(name=settings.model)
    protocol = wire or (resolved.provider_config.wire if resolved.provider_config else "chat")
    return ModelFacts(name=resolved.name, info=resolved.info, known=resolved.known, protocol=protocol)


def open_environment(root: Path, settings: Settings, provider: Provider, sink: EventSink,
                     state: Path | None = None, wire: str | None = None) -> Environment:
    base = state or workspace_dir(root)
    return Environment(
        root=root.resolve(), settings=settings, store=Store(base / "store.db"),
        registry=default_registry(settings), provider=provider, documents=DiskDocuments(root),
        applier=DiskApplier(root.resolve()), sink=sink, trace_dir=base / "traces",
        model=model_facts(settings, wire), mcp=mcp_manager(settings, root),
    )


def mcp_manager(settings: Settings, root: Path) -> McpManager | None:
    """The configured MCP servers (not started: they start when a session first needs them)."""
    if not settings.mcp.servers:
        return None
    from lsp_agent.mcp.manager import McpManager

    return McpManager(settings.mcp, root.resolve())


async def run_once(env: Environment, prompt: str, max_steps: int | None = None,
                   session_id: str | None = None) -> RunFinish:
    session = AgentSession(env, session_id, title=prompt[:80])
    try:
        return await Generation(session, max_steps).run(prompt)
    finally:
        close = getattr(env.provider, "aclose", None)
        if close is not None:
            await close()
        if env.mcp is not None:
            await env.mcp.aclose()
