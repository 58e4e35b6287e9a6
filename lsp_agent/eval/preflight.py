"""Before any attempt of a cohort: can each arm's model be reached at all?

Without this, a missing key or a stopped server shows up as every attempt failing in a few
seconds, dozens of times. For each arm, with the settings its agent will see: a scripted model's
reply script exists; a hosted provider's key variable is set; the endpoint answers its model list
within a bound (a connection, a timeout, a refused key are each named); the model is in that list
when the server gives one; each language server an arm names (editorQueries.languageServers) is
installed. Arms that share a provider are asked once.

A manifest with its own `command` runs another agent, whose providers this cannot know: skipped.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lsp_agent.domain.ports import ProviderError
from lsp_agent.eval.manifest import Arm, Manifest, flatten_config
from lsp_agent.eval.runner import expand_value
from lsp_agent.langserver.program import missing_reason, resolve_program
from lsp_agent.providers.http_base import DEFAULT_API_KEY_ENV
from lsp_agent.providers.model_list import TIMEOUT_S, list_models
from lsp_agent.providers.registry import BUILTIN_PROVIDERS, SCRIPTED, resolve_model
from lsp_agent.settings.config import ConfigError, ProviderConfig, Settings, load_settings

_LOCAL_HOSTS = ("localhost", "::1")


@dataclass(frozen=True)
class Preflight:
    problems: list[str]  # one line each, naming the arm; empty: go
    notes: list[str]  # what was checked or skipped, for stderr


def _arm_layer(arm: Arm, manifest_dir: str) -> dict[str, Any]:
    """The arm's overrides as the agent's `--config` pairs will nest them."""
    layer: dict[str, Any] = {}
    pairs: dict[str, Any] = {f"sampling.{k}": v for k, v in arm.sampling().items()}
    pairs.update(flatten_config(arm.config))
    for key, value in pairs.items():
        node = layer
        *parents, leaf = key.split(".")
        for name in parents:
            child = node.setdefault(name, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[leaf] = expand_value(value, manifest_dir)
    return layer


def _is_local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in _LOCAL_HOSTS or host.startswith("127.")


def _settings(arm: Arm, manifest_dir: str) -> Settings:
    base_urls = {name: entry.base_url for name, entry in BUILTIN_PROVIDERS.items() if entry.base_url}
    return load_settings(None, _arm_layer(arm, manifest_dir), base_urls=base_urls)


async def _reachable(provider: str, model_id: str, config: ProviderConfig) -> str | None:
    listed = await list_models(provider, config, timeout_s=TIMEOUT_S)
    if listed.failure is not None:
        if listed.failure.kind == "http_status":
            return None  # it answered, it just cannot list models: the attempts will tell
        return listed.failure.message
    if listed.models and not listed.truncated and model_id not in listed.models:
        shown = ", ".join(listed.models[:10]) + (" ..." if len(listed.models) > 10 else "")
        return f"{config.base_url} does not list the model {model_id!r} (it lists {shown})"
    return None


async def preflight(manifest: Manifest, manifest_dir: Path) -> Preflight:
    if manifest.command:
        return Preflight([], ["preflight skipped: the manifest names its own agent `command`"])
    problems: list[str] = []
    notes: list[str] = []
    asked: dict[tuple[str, str, str | None], str | None] = {}
    for arm in manifest.arms:
        try:
            settings = await asyncio.to_thread(_settings, arm, str(manifest_dir))  # reads the user's config
            resolved = resolve_model(settings, manifest.model)
        except (ConfigError, ProviderError) as exc:
            problems.append(f"arm {arm.name}: its settings are not valid: {exc}")
            continue
        for server in settings.editor_queries.language_servers:  # every attempt would start it
            if resolve_program(server.command[0]) is None:
                problems.append(f"arm {arm.name}: {missing_reason(server.command)}")
            else:
                notes.append(f"arm {arm.name}: language server {server.command[0]} found")
        if resolved.provider_name == SCRIPTED:
            script = settings.script
            if script is None or not await asyncio.to_thread(Path(script).is_file):
                problems.append(f"arm {arm.name}: the scripted model needs `config.script`, a reply script file "
                                f"({script or 'none given'} is not a file)")
            else:
                notes.append(f"arm {arm.name}: scripted replies from {Path(script).name}")
            continue
        config = resolved.provider_config
        if config is None:
            problems.append(f"arm {arm.name}: provider {resolved.provider_name!r} has no base URL: set "
                            f"`config.providers.{resolved.provider_name}.baseUrl` in the arm")
            continue
        key_env = config.api_key_env or DEFAULT_API_KEY_ENV
        hosted = key_env != DEFAULT_API_KEY_ENV and not _is_local(config.base_url)
        if hosted and not os.environ.get(key_env):
            problems.append(f"arm {arm.name}: {manifest.model} needs an API key in {key_env}, which is not set "
                            "(or use examples/eval/offline.json, which needs none)")
            continue
        where = (resolved.provider_name, config.base_url, key_env)
        if where not in asked:
            asked[where] = await _reachable(resolved.provider_name, resolved.model_id, config)
        if asked[where] is not None:
            problems.append(f"arm {arm.name}: {asked[where]}")
        else:
            notes.append(f"arm {arm.name}: {config.base_url} answers")
    return Preflight(problems, notes)
