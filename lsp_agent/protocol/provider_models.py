"""`agent/models`, `agent/providerKey` and `agent/mode`: the editor's model picker, the keys it keeps in
its secret store, and the mode the next runs work in (Agent, Plan, Ask)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lsp_agent.protocol.models import Params, Result

AGENT_MODELS = "agent/models"
AGENT_PROVIDER_KEY = "agent/providerKey"
AGENT_MODE = "agent/mode"

ListFailureKind = Literal["no_base_url", "connection", "timeout", "needs_key", "key_refused", "http_status",
                          "malformed"]
ModelSource = Literal["current", "configured", "known", "server"]
ModeId = Literal["agent", "plan", "ask"]


class ModelsParams(Params):
    provider: str | None = Field(None, max_length=200,
                                 description="Only this provider, and ask its server even when it would not be "
                                             "asked otherwise (\"test the connection\"). Omitted: every provider.")


class ModelOut(Result):
    name: str = Field(description="`provider/model`, as `lspAgent.model` takes it.")
    provider: str
    source: ModelSource = Field(description="`current` (the model in use), `configured` (declared in the "
                                            "settings), `known` (the built-in table), `server` (its /v1/models).")


class ListFailureOut(Result):
    kind: ListFailureKind = Field(description="`no_base_url`, `connection` (nothing answers), `timeout`, "
                                              "`needs_key`, `key_refused`, `http_status`, `malformed`.")
    message: str = Field(description="What happened and what to do, for the user.")


class ProviderOut(Result):
    name: str
    base_url: str | None = Field(None, description="Where its OpenAI-compatible API is; null when none is known.")
    key: Literal["editor", "environment", "none"] = Field(
        description="Where the key sent comes from: given by the editor (agent/providerKey), the provider's "
                    "environment variable, or none.")
    key_env: str | None = Field(None, description="The environment variable it reads a key from.")
    asked: bool = Field(description="Whether its server was asked for its models this time.")
    models: int = Field(0, description="How many models its server listed.")
    truncated: bool = Field(False, description="The server listed more models than are returned.")
    failure: ListFailureOut | None = None


class ModelsResult(Result):
    current: str | None = Field(description="The model the next run uses; null when none is configured.")
    models: list[ModelOut]
    providers: list[ProviderOut]


class ProviderKeyParams(Params):
    provider: str = Field(min_length=1, max_length=200, description="The provider the key is for (`openai`, or "
                                                                       "a name from `providers`).")
    key: str | None = Field(None, description="The API key; null forgets the one given before. Kept in the "
                                              "server's memory only, never written nor logged.")


class ProviderKeyResult(Result):
    provider: str
    key_set: bool = Field(description="Whether the server now holds a key for the provider from the editor.")


class ModeParams(Params):
    mode: ModeId | None = Field(None, description="Switch to this mode; omitted: only report the current one.")


class ModeOut(Result):
    id: ModeId
    name: str
    description: str


class ModeResult(Result):
    mode: ModeId = Field(description="The mode generations started from now on work in.")
    modes: list[ModeOut]


METHOD_DOCS: tuple[tuple[str, Literal["request", "notification"], str, type[Params] | type[Result],
                         type[Result] | None, str], ...] = (
    (AGENT_MODELS, "request", "client → server", ModelsParams, ModelsResult,
     "The models the picker offers: the one in use, those the settings declare, the built-in table's, and what "
     "each provider's server lists at `GET {baseUrl}/models` (one bounded request per provider, 5 s timeout). "
     "Servers are asked for user-configured providers, the current model's, those with a key, and loopback ones; "
     "`provider` asks just that one. A provider that fails carries a classified `failure`; the list still comes."),
    (AGENT_PROVIDER_KEY, "request", "client → server", ProviderKeyParams, ProviderKeyResult,
     "Give (or with `key: null` forget) the API key for a provider. The server keeps it in memory only and sends "
     "it as the bearer token for that provider, before its environment variable; it is never written, logged, nor "
     "passed to the commands the agent runs. An unusable key is InvalidParams naming why, never quoting it."),
    (AGENT_MODE, "request", "client → server", ModeParams, ModeResult,
     "Report or switch the mode of the generations started from now on: `agent` (the configured approvals and "
     "sandbox), `plan` (read-only sandbox, no approvals asked, no edits; ends with a `## Plan` message), `ask` "
     "(no edits, no commands). Enforced by the server: a refused call is a `denied` tool result the model sees."),
)
