"""Built-in providers, known models, and `provider/model` resolution.

A model is named `provider/model`; everything after the first slash is the
model id sent on the wire (so `vllm/Qwen/Qwen2.5-Coder` is provider `vllm`).
A bare known name (`gpt-4.1`) uses its usual provider. User settings override
both tables: `Settings.providers[name]` replaces a built-in provider entry and
`Settings.models["provider/model"]` or `Settings.models["model"]` overrides the
fields it sets (the more specific key wins).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from lsp_agent.domain.ports import Provider, ProviderError, ProviderErrorKind
from lsp_agent.providers.http_base import DEFAULT_API_KEY_ENV
from lsp_agent.settings.config import ModelInfo, ProviderConfig, Settings

__all__ = [
    "BUILTIN_PROVIDERS",
    "DEFAULT_CONTEXT_WINDOW",
    "KNOWN_MODELS",
    "NO_MODEL",
    "KnownModel",
    "NoModel",
    "ProviderEntry",
    "ResolvedModel",
    "build_provider",
    "resolve_model",
]

Wire = Literal["chat", "responses"]
WIRES: tuple[Wire, ...] = ("chat", "responses")

#: Context window assumed for a model nobody described; small on purpose so the budget
#: compacts early rather than overflowing (and it never qualifies for the context pack).
DEFAULT_CONTEXT_WINDOW = 32_768
SCRIPTED = "scripted"


#: Said when nothing chose a model (the default, `scripted/demo`, is only the demo's test double).
NO_MODEL = ("no model is configured: pass --model provider/model (e.g. ollama/qwen2.5-coder, openai/gpt-4.1; "
            "--base-url URL for another OpenAI-compatible server), or set model = \"provider/model\" in "
            ".lsp-agent/config.toml or ~/.config/lsp-agent/config.toml (in an editor also `model` in the "
            "initialization options or the lspAgent settings); `lsp-agent demo` runs a scripted example without one")


class NoModel(ProviderError):
    """No layer of the configuration names a model."""


@dataclass(frozen=True, slots=True)
class ProviderEntry:
    name: str
    base_url: str | None
    wire: Wire
    api_key_env: str | None
    description: str

    def config(self) -> ProviderConfig | None:
        if self.base_url is None:
            return None
        return ProviderConfig.model_validate(
            {"base_url": self.base_url, "wire": self.wire, "api_key_env": self.api_key_env}
        )


BUILTIN_PROVIDERS: dict[str, ProviderEntry] = {
    "openai": ProviderEntry("openai", "https://api.openai.com/v1", "chat", "OPENAI_API_KEY",
                            "OpenAI's API (use wire 'responses' for stateless reasoning items)"),
    # A local server needs no key; OLLAMA_API_KEY is only read if set (hosted Ollama).
    "ollama": ProviderEntry("ollama", "http://localhost:11434/v1", "chat", "OLLAMA_API_KEY",
                            "a local Ollama server"),
    "openai-compatible": ProviderEntry("openai-compatible", None, "chat", DEFAULT_API_KEY_ENV,
                                       "any OpenAI-compatible server; needs --base-url or config"),
}


@dataclass(frozen=True, slots=True)
class KnownModel:
    provider: str
    info: ModelInfo


def _info(context_window: int, reasoning: bool, tools: bool, efforts: list[str] | None = None) -> ModelInfo:
    # Reasoning models spend output tokens on thinking before the answer: give them more room.
    return ModelInfo.model_validate(
        {"context_window": context_window, "reasoning": reasoning, "tools": tools, "efforts": efforts or [],
         "max_output_tokens": 32_768 if reasoning else 8_192}
    )


_OPENAI_O = ["low", "medium", "high"]
_GPT5 = ["minimal", "low", "medium", "high"]

KNOWN_MODELS: dict[str, KnownModel] = {
    "gpt-4.1": KnownModel("openai", _info(1_047_576, False, True)),
    "gpt-4.1-mini": KnownModel("openai", _info(1_047_576, False, True)),
    "gpt-4o": KnownModel("openai", _info(128_000, False, True)),
    "o3": KnownModel("openai", _info(200_000, True, True, _OPENAI_O)),
    "o4-mini": KnownModel("openai", _info(200_000, True, True, _OPENAI_O)),
    "gpt-5": KnownModel("openai", _info(400_000, True, True, _GPT5)),
    "gpt-5-mini": KnownModel("openai", _info(400_000, True, True, _GPT5)),
    "qwen2.5-coder": KnownModel("ollama", _info(32_768, False, True)),
    "qwen3": KnownModel("ollama", _info(40_960, True, True)),
    "llama3.1": KnownModel("ollama", _info(131_072, False, True)),
    "gpt-oss": KnownModel("ollama", _info(131_072, True, True, _OPENAI_O)),
}


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    provider_name: str
    model_id: str
    #: None when no base URL is known yet (openai-compatible, unconfigured names, scripted).
    provider_config: ProviderConfig | None
    #: Registry facts overlaid with the user's declarations; context_window always set.
    #: reasoning/tools stay None when neither the registry nor the user said.
    info: ModelInfo
    known: bool

    @property
    def name(self) -> str:
        return f"{self.provider_name}/{self.model_id}"


def _known(model_id: str) -> KnownModel | None:
    # Ollama tags (`qwen2.5-coder:7b`) share their family's facts.
    return KNOWN_MODELS.get(model_id) or KNOWN_MODELS.get(model_id.split(":", 1)[0])


def _split(name: str) -> tuple[str, str]:
    name = name.strip()
    if "/" in name:
        provider, model_id = name.split("/", 1)
        if provider and model_id:
            return provider, model_id
        raise ProviderError(ProviderErrorKind.CONFIG,
                            f"model name {name!r} is not of the form provider/model (e.g. ollama/llama3.1)")
    if not name:
        raise ProviderError(ProviderErrorKind.CONFIG, "no model named: pass --model provider/model")
    known = _known(name)
    return (known.provider if known else "openai-compatible"), name


def resolve_model(settings: Settings, name: str) -> ResolvedModel:
    provider, model_id = _split(name)
    known = _known(model_id)
    merged: dict[str, Any] = known.info.model_dump() if known else {}
    # Least specific first, so `provider/model` declarations win over bare-name ones.
    for key in (model_id, f"{provider}/{model_id}"):
        declared = settings.models.get(key)
        if declared is not None:
            merged.update({field: getattr(declared, field) for field in declared.model_fields_set})
    if merged.get("context_window") is None:
        merged["context_window"] = DEFAULT_CONTEXT_WINDOW
    info = ModelInfo.model_validate(merged)
    config = settings.providers.get(provider)
    builtin = BUILTIN_PROVIDERS.get(provider)
    if config is None and builtin is not None:
        config = builtin.config()
    elif config is not None and builtin is not None and "api_key_env" not in config.model_fields_set:
        # A section that tweaks a built-in provider (a timeout, `discover`) keeps its key variable.
        config = config.model_copy(update={"api_key_env": builtin.api_key_env})
    return ResolvedModel(provider, model_id, config, info, known is not None)


def build_provider(settings: Settings, name: str, *, base_url: str | None = None,
                   wire: str | None = None) -> Provider:
    """The provider for `name`; `base_url` and `wire` (CLI flags) override the configuration."""
    if wire is not None and wire not in WIRES:
        raise ProviderError(ProviderErrorKind.CONFIG,
                            f"unknown wire protocol {wire!r}: use {' or '.join(WIRES)}")
    resolved = resolve_model(settings, name)
    if resolved.provider_name == SCRIPTED and not settings.script and "model" not in settings.model_fields_set:
        raise NoModel(ProviderErrorKind.CONFIG, NO_MODEL)
    if resolved.provider_name == SCRIPTED:
        from lsp_agent.providers.scripted import ScriptedProvider

        provider: Provider = ScriptedProvider.from_settings(settings)
        return provider
    config = resolved.provider_config
    if base_url:
        if config is None:
            entry = BUILTIN_PROVIDERS.get(resolved.provider_name)
            config = ProviderConfig.model_validate(
                {"base_url": base_url, "api_key_env": entry.api_key_env if entry else None}
            )
        else:
            config = config.model_copy(update={"base_url": base_url})
    if config is None:
        p = resolved.provider_name
        raise ProviderError(
            ProviderErrorKind.CONFIG,
            f"provider {p!r} has no base URL: pass --base-url http://host:port/v1, or add "
            f"[providers.{p}] with baseUrl = \"...\" to .lsp-agent/config.toml "
            f"(built-in providers: {', '.join(sorted(BUILTIN_PROVIDERS))})",
        )
    if wire:
        config = config.model_copy(update={"wire": wire})
    label = resolved.name
    limit = resolved.info.max_output_tokens
    # each wire's module is loaded by the runs that speak it: a run does not hold the other wire's code
    if config.wire == "responses":
        from lsp_agent.providers.responses import ResponsesProvider

        return ResponsesProvider(config, model=resolved.model_id, label=label, max_output_tokens=limit,
                                 reasoning_items=resolved.info.reasoning is not False,
                                 provider_name=resolved.provider_name, sampling=settings.sampling)
    from lsp_agent.providers.chat_completions import ChatCompletionsProvider

    return ChatCompletionsProvider(config, model=resolved.model_id, label=label, max_output_tokens=limit,
                                   provider_name=resolved.provider_name, sampling=settings.sampling)
