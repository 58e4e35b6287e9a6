#!/usr/bin/env bash
# SQL only in the store: no statement is run on a connection anywhere in lsp_agent/ but lsp_agent/store/.
# Import contracts cannot see this (a connection reached through the store needs no sqlite3 import).
set -euo pipefail
cd "$(dirname "$0")/.."
outside=$(grep -rnE '\.(execute|executemany|executescript)\(' lsp_agent --include='*.py' | grep -v '^lsp_agent/store/' || true)
if [ -n "$outside" ]; then
  printf '%s\n' "$outside" >&2
  echo "SQL outside lsp_agent/store/: the lines above run statements on a database connection;" \
       "give the store a named operation for them and call that instead." >&2
  exit 1
fi
