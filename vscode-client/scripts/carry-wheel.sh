#!/usr/bin/env bash
# Puts the lsp-agent wheel of this checkout into vscode-client/server/, where the .vsix carries it:
# on a machine without lsp-agent the extension builds its managed environment from it (see
# src/managedEnv.ts). Only the wheel itself: its dependencies come from the user's package index
# when the environment is built. The wheel is the release one (.ci/build_dist.sh: built from the
# files git tracks, checked by twine), so the .vsix never carries a file nobody added; without
# the build/twine packages (a developer's quick package) it falls back to `pip wheel --no-deps`,
# and says so. Prints the wheel's path.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CLIENT="$(dirname "$HERE")"
REPO="$(dirname "$CLIENT")"
PYTHON="${LSP_AGENT_PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ -f "$REPO/.ci/build_dist.sh" ] && "$PYTHON" -c 'import build, twine' 2>/dev/null; then
  # build_dist.sh runs `python`: the interpreter chosen here
  mkdir -p "$work/bin" && printf '#!/bin/sh\nexec %q "$@"\n' "$(command -v "$PYTHON")" >"$work/bin/python" && chmod +x "$work/bin/python"
  PATH="$work/bin:$PATH" bash "$REPO/.ci/build_dist.sh" "$work/dist" >/dev/null 2>"$work/build.log" \
    || { cat "$work/build.log" >&2; exit 1; }
else
  echo "carry-wheel: no build/twine for $PYTHON: the wheel comes from 'pip wheel --no-deps' of the checkout (not the release build)" >&2
  "$PYTHON" -m pip wheel --no-deps --disable-pip-version-check -q -w "$work/dist" "$REPO" >&2
fi
wheels=("$work"/dist/lsp_agent-*-py3-none-any.whl)
[ -f "${wheels[0]}" ] || { echo "carry-wheel: no lsp_agent wheel was built" >&2; exit 1; }
mkdir -p "$CLIENT/server"
rm -f "$CLIENT/server"/lsp_agent-*.whl
cp "${wheels[0]}" "$CLIENT/server/"
echo "$CLIENT/server/$(basename "${wheels[0]}")"
