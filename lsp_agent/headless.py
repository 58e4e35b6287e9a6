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
    from lsp_agent.providers.discovery import ServerFacts


def make_provider(settings: Settings, base_url: str | None = None, wire: str | None = None) -> Provider:
    from lsp_agent.providers.registry import build_provider

    return build_provider(settings, settings.model, base_url=base_url, wire=wire)


def _window_declared(settings: Settings, provider: str, model_id: str) -> bool:
    if settings.compaction.context_window is not None:
        return True
    return any(declared is not None and "context_window" in declared.model_fields_set
               for declared in (settings.models.get(model_id), settings.models.get(f"{provider}/{model_id}")))


def model_facts(settings: Settings, wire: str | None = None, server: ServerFacts | None = None) -> ModelFacts:
    """Registry facts with the user's declarations; the server's context window beats the
    registry's (it is what the model runs with) but not the user's own declaration."""
    from lsp_agent.providers.registry import resolve_model

    try:
        resolved = resolve_model(settings, settings.model)
    except ProviderError:
        return ModelFacts(name=settings.model)
    protocol = wire or (resolved.provider_config.wire if resolved.provider_config else "chat")
    info = resolved.info
    if (server is not None and server.context_window is not None
            and not _window_declared(settings, resolved.provider_name, resolved.model_id)):
        info = info.model_copy(update={"context_window": server.context_window})
    return ModelFacts(name=resolved.name, info=info, known=resolved.known, protocol=protocol)


async def discover_server(provider: Provider, settings: Settings) -> ServerFacts | None:
    """The server's own facts (context window, model id), for HTTP providers that allow it."""
    from lsp_agent.providers.discovery import discover
    from lsp_agent.providers.http_base import HttpStreamingProvider

    if not isinstance(provider, HttpStreamingProvider) or not provider.config.discover:
        return None
    return await discover(provider.config, provider.model or settings.model)


def run_header(env: Environment, server: ServerFacts | None) -> str:
    """One line before the run: model, endpoint, wire, and the context window with its source."""
    from lsp_agent.providers.http_base import HttpStreamingProvider

    provider, facts = env.provider, env.model
    where = f" via {provider.url} ({provider.protocol})" if isinstance(provider, HttpStreamingProvider) else ""
    window = env.settings.compaction.context_window or facts.info.context_window
    if env.settings.compaction.context_window is not None:
        source = "configuration: compaction.context_window"
    elif server is not None and server.context_window is not None and window == server.context_window:
        source = f"from the server: {server.source}"
    elif facts.known:
        source = "registry or configuration"
    else:
        source = "configuration or default: the server did not report it"
    served = f" · server model {server.model_id}" if server is not None and server.model_id else ""
    context = f"{window} tokens" if window is not None else "unknown"
    return f"lsp-agent: {facts.name}{where}{served} · context window {context} ({source})"


def open_environment(root: Path, settings: Settings, provider: Provider, sink: EventSink,
                     state: Path | None = None, wire: str | None = None,
                     server: ServerFacts | None = None) -> Environment:
    base = state or workspace_dir(root)
    return Environment(
        root=root.resolve(), settings=settings, store=Store(base / "store.db"),
        registry=default_registry(settings), provider=provider, documents=DiskDocuments(root),
        applier=DiskApplier(root.resolve()), sink=sink, trace_dir=base / "traces",
        model=model_facts(settings, wire, server),
    )


async def run_once(env: Environment, prompt: str, max_steps: int | None = None,
                   session_id: str | None = None) -> RunFinish:
    session = AgentSession(env, session_id, title=prompt[:80])
    try:
        return await Generation(session, max_steps).run(prompt)
    finally:
        close = getattr(env.provider, "aclose", None)
        if close is not None:
            await close()
