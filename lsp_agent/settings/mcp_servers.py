"""`[mcp.servers.NAME]`: how to start (stdio `command`) or reach (`url`) an MCP server.

A leaf module (no lsp_agent imports): `lsp_agent.settings.config` embeds it in the settings.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: Server names become part of tool names (`mcp__<server>__<tool>`), which providers limit to
#: `[A-Za-z0-9_-]{1,64}`; a double underscore would make the name ambiguous.
SERVER_NAME = re.compile(r"^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$")
SERVER_NAME_MAX = 24


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    command: str | None = Field(None, description="Program to start (stdio transport).")
    args: list[str] = Field(default_factory=list, description="Arguments of `command`.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment of the server process; it does not inherit credentials "
                    "(only HOME, LOGNAME, PATH, SHELL, TERM, USER are passed on).")
    cwd: str | None = Field(None, description="Working directory of `command` (default: the workspace root).")
    url: str | None = Field(None, description="Streamable HTTP endpoint (instead of `command`).")
    enabled: bool = True
    startup_timeout_ms: int = Field(30_000, ge=100, le=600_000, alias="startupTimeoutMs",
                                    description="Connect + list tools must finish within this.")
    tool_timeout_ms: int = Field(60_000, ge=100, le=3_600_000, alias="toolTimeoutMs",
                                 description="One tool call must finish within this.")
    trusted: bool = Field(
        False, description="Trust the server's readOnlyHint annotations: its read-only tools share the "
                           "parallel lane (and, once approvals exist, run without asking).")
    max_result_chars: int = Field(32_000, ge=200, alias="maxResultChars",
                                  description="A tool result beyond this is cut, with a marker.")

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of `command` (stdio) or `url` (streamable HTTP)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("`url` must be an http:// or https:// URL")
        return self


class McpSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in servers:
            if len(name) > SERVER_NAME_MAX or not SERVER_NAME.match(name):
                raise ValueError(f"MCP server name {name!r}: use letters, digits, '-' and single '_', "
                                 f"at most {SERVER_NAME_MAX} characters")
        return servers

    def enabled(self) -> dict[str, McpServerConfig]:
        return {name: cfg for name, cfg in sorted(self.servers.items()) if cfg.enabled}
