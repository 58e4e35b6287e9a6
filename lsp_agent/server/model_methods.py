"""`agent/models`, `agent/providerKey`, `agent/mode`: the editor's model picker, the keys from its secret
store, and its mode picker. The keys stay in this process's memory (providers/keys.py)."""

from __future__ import annotations

import asyncio
import ipaddress
import re
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from lsp_agent.protocol.errors import INVALID_PARAMS, ProtocolError
from lsp_agent.protocol.provider_models import (
    AGENT_MODE,
    AGENT_MODELS,
    AGENT_PROVIDER_KEY,
    ListFailureOut,
    ModelOut,
    ModelSource,
    ModelsParams,
    ModelsResult,
    ModeOut,
    ModeParams,
    ModeResult,
    ProviderKeyParams,
    ProviderKeyResult,
    ProviderOut,
)
from lsp_agent.providers import keys
from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.rpc import Routes
from lsp_agent.settings.config import ProviderConfig, Settings
from lsp_agent.settings.modes import EDITOR_MODES

if TYPE_CHECKING:
    from lsp_agent.providers.model_list import ModelList

routes = Routes()

#: what `providers.x.apiKeyEnv` defaults to (as http_base's, which the server loads only with a provider)
DEFAULT_API_KEY_ENV = "LSP_AGENT_API_KEY"
#: how many servers one agent/models asks at most (each at most once, all at the same time)
MAX_ASKED = 16
_PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def _config(settings: Settings, name: str) -> ProviderConfig | None:
    from lsp_agent.providers.registry import resolve_model

    # the same resolution a run uses, so the picker asks the endpoint with the key a run would send
    return resolve_model(settings, f"{name}/-").provider_config


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _key_source(name: str, config: ProviderConfig | None) -> Literal["editor", "environment", "none"]:
    if keys.has_key(name):
        return "editor"
    env = (config.api_key_env if config else None) or DEFAULT_API_KEY_ENV
    return "environment" if keys.api_key(None, env) else "none"


def _current(settings: Settings) -> str | None:
    chosen = "model" in settings.model_fields_set or bool(settings.script)
    return settings.model if chosen else None


def _provider_of(settings: Settings, name: str) -> str | None:
    from lsp_agent.providers.registry import resolve_model

    try:
        return resolve_model(settings, name).provider_name
    except Exception:  # a malformed name in the settings is the settings' problem, reported there
        return None


@routes.rpc(AGENT_MODELS, ModelsParams)
async def agent_models(ls: AgentServer, params: ModelsParams) -> ModelsResult:
    # loaded with the first picker, not at start: a server that is never asked keeps httpx out
    from lsp_agent.providers.model_list import list_models
    from lsp_agent.providers.registry import BUILTIN_PROVIDERS, KNOWN_MODELS, SCRIPTED

    settings = ls.runtime().agent.env.settings
    current = _current(settings)
    current_provider = _provider_of(settings, current) if current else None
    names = [*BUILTIN_PROVIDERS, *(n for n in settings.providers if n not in BUILTIN_PROVIDERS)]
    if params.provider is not None:
        if params.provider not in names:
            raise ProtocolError(INVALID_PARAMS, f"{AGENT_MODELS}: no provider {params.provider!r}; the providers are "
                                f"{', '.join(names)} (add others under `providers` in the settings)",
                                field="provider")
        names = [params.provider]
    configs = {name: _config(settings, name) for name in names}

    def ask(name: str) -> bool:
        config = configs[name]
        if config is None:
            return False
        return (params.provider is not None or name in settings.providers or name == current_provider
                or _key_source(name, config) != "none" or _loopback(config.base_url))

    asked = [name for name in names if ask(name)][:MAX_ASKED]
    answers = await asyncio.gather(*(list_models(name, cfg) for name in asked if (cfg := configs[name])))
    lists: dict[str, ModelList] = dict(zip(asked, answers, strict=True))

    models: dict[str, ModelOut] = {}

    def add(name: str, provider: str, source: ModelSource) -> None:
        if name not in models and (params.provider is None or provider == params.provider):
            models[name] = ModelOut(name=name, provider=provider, source=source)

    if current and current_provider and current_provider != SCRIPTED:
        add(current if "/" in current else f"{current_provider}/{current}", current_provider, "current")
    for declared in settings.models:
        provider = _provider_of(settings, declared)
        if provider and provider != SCRIPTED:
            add(declared if "/" in declared else f"{provider}/{declared}", provider, "configured")
    for name in asked:
        for model_id in lists[name].models:
            add(f"{name}/{model_id}", name, "server")
    for model_id, known in KNOWN_MODELS.items():
        add(f"{known.provider}/{model_id}", known.provider, "known")

    providers: list[ProviderOut] = []
    for name in names:
        config = configs[name]
        listed = lists.get(name)
        failure = None
        if config is None:
            failure = ListFailureOut(kind="no_base_url", message=f"provider {name!r} has no base URL: set "
                                     f"`providers.{name}.baseUrl` in the settings")
        elif listed is not None and listed.failure is not None:
            failure = ListFailureOut(kind=listed.failure.kind, message=listed.failure.message)
        providers.append(ProviderOut(
            name=name, base_url=config.base_url if config else None, key=_key_source(name, config),
            key_env=(config.api_key_env if config else None) or DEFAULT_API_KEY_ENV, asked=listed is not None,
            models=len(listed.models) if listed else 0, truncated=bool(listed and listed.truncated),
            failure=failure))
    return ModelsResult(current=current, models=list(models.values()), providers=providers)


@routes.rpc(AGENT_PROVIDER_KEY, ProviderKeyParams)
def agent_provider_key(ls: AgentServer, params: ProviderKeyParams) -> ProviderKeyResult:
    if not _PROVIDER_NAME.fullmatch(params.provider):
        raise ProtocolError(INVALID_PARAMS, f"{AGENT_PROVIDER_KEY}: `provider` is not a provider name "
                            "(letters, digits, `.`, `_`, `-`)", field="provider")
    if params.key is None:
        keys.forget(params.provider)
        return ProviderKeyResult(provider=params.provider, key_set=False)
    problem = keys.key_problem(params.key)
    if problem is not None:  # never quotes the key: this message reaches the log and the editor
        raise ProtocolError(INVALID_PARAMS, f"{AGENT_PROVIDER_KEY}: {problem}", field="key")
    keys.remember(params.provider, params.key)
    return ProviderKeyResult(provider=params.provider, key_set=True)


@routes.rpc(AGENT_MODE, ModeParams)
def agent_mode(ls: AgentServer, params: ModeParams) -> ModeResult:
    ls.runtime()  # a server that could not start says so, rather than pretending to switch
    if params.mode is not None and params.mode != ls.mode:
        ls.mode = params.mode
        ls.reload_settings()
    return ModeResult(mode=ls.mode, modes=[ModeOut(id=m.intent, name=m.name, description=m.description)
                                           for m in EDITOR_MODES])
