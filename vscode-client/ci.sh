#!/usr/bin/env bash
# CI for the VS Code client: install from the lockfile, check the generated protocol types, lint,
# typecheck, bundle, then the unit
# tests and the protocol test against the real server (`$LSP_AGENT_PYTHON -m lsp_agent serve`).
# Here activation runs against a stand-in `vscode` module; the real extension host (code-server +
# chromium) is exercised by tests/e2e_vscode, which .ci/run runs with the Python tests.
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")"
export LSP_AGENT_PYTHON="${LSP_AGENT_PYTHON:-python3}"
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

step() { printf '\n==> vscode-client: %s\n' "$*"; }

step "toolchain: node $(node --version), npm $(npm --version), python: $LSP_AGENT_PYTHON"
if ! "$LSP_AGENT_PYTHON" -c 'import lsp_agent.server.app' 2>/dev/null; then
  echo "lsp-agent is not importable with $LSP_AGENT_PYTHON; install it (pip install -e .) or set LSP_AGENT_PYTHON" >&2
  exit 1
fi

step "npm ci"
npm ci

step "generated protocol types are current (src/protocol.gen.ts from lsp-agent schema)"
npm run gen:protocol -- --check

step "eslint"
npm run lint

step "tsc (strict)"
npm run typecheck

step "esbuild bundle"
npm run build

step "the lsp-agent wheel the .vsix carries (scripts/carry-wheel.sh; the managed-environment tests use it)"
bash scripts/carry-wheel.sh

step "tests: unit + protocol (node --test)"
npm test
