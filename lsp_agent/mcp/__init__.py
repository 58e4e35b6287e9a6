"""MCP servers as tools: configuration, connections (official `mcp` SDK), the tool adapter and
result conversion. Importing this package does not import the SDK; `manager` does."""
