#!/usr/bin/env bash
# Keeps what a user installs as CI artifacts in dist/: the .vsix (carrying the wheel) and the wheel
# itself. Run after vscode-client/e2e/install.sh has packaged the .vsix (it rebuilds it when a
# source is newer), so the real-host suite tests exactly these files.
set -euo pipefail
cd "$(dirname "$0")/.."
VSIX="$(bash vscode-client/e2e/install.sh | tail -n 1)"
mkdir -p dist
rm -f dist/lsp-agent-*.vsix
version="$(python3 -c 'import json; print(json.load(open("vscode-client/package.json"))["version"])')"
cp "$VSIX" "dist/lsp-agent-$version.vsix"
cp vscode-client/server/lsp_agent-*-py3-none-any.whl dist/
ls -l dist/
