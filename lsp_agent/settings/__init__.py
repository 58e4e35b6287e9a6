"""Settings: the config model and its sources, MCP server entries, where state lives."""
