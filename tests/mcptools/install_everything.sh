#!/usr/bin/env bash
# Installs @modelcontextprotocol/server-everything (the MCP reference server, from npm) into a cached
# directory for tests/mcp. Idempotent; .ci/run calls it. Override the place with LSP_AGENT_MCP_EVERYTHING_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="${LSP_AGENT_MCP_EVERYTHING_DIR:-.ci-cache/mcp-everything}"
if [ -x "$dir/node_modules/.bin/mcp-server-everything" ]; then
  echo "server-everything already installed in $dir"; exit 0
fi
mkdir -p "$dir"
npm install --no-audit --no-fund --silent --prefix "$dir" @modelcontextprotocol/server-everything@2026.8.31
