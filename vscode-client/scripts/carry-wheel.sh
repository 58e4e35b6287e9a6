#!/usr/bin/env bash
# Puts the lsp-agent wheel of this checkout into vscode-client/server/, where the .vsix carries it:
# on a machine without lsp-agent the extension builds its managed environment from it (see
# src/managedEnv.ts). Only the wheel itself (--no-deps): its dependencies come from the user's
# package index when the environment is built. Prints the wheel's path.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CLIENT="$(dirname "$HERE")"
REPO="$(dirname "$CLIENT")"
PYTHON="${LSP_AGENT_PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$PYTHON" -m pip wheel --no-deps --disable-pip-version-check -q -w "$work" "$REPO" >&2
wheels=("$work"/lsp_agent-*-py3-none-any.whl)
[ -f "${wheels[0]}" ] || { echo "carry-wheel: pip wheel made no lsp_agent wheel" >&2; exit 1; }
mkdir -p "$CLIENT/server"
rm -f "$CLIENT/server"/lsp_agent-*.whl
cp "${wheels[0]}" "$CLIENT/server/"
echo "$CLIENT/server/$(basename "${wheels[0]}")"
