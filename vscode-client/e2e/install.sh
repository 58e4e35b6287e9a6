#!/usr/bin/env bash
# Installs what the real-host suite (tests/e2e_vscode) needs: code-server from npm (pinned; 4.100.3 is
# the newest release that runs on Node 20), Debian's chromium (Playwright drives it through
# executable_path: Playwright's own browser download is not reachable here), and the extension packaged
# as a .vsix. code-server is cached under ~/.cache/lsp-agent keyed by version, so only the first run
# pays the install; apt runs only for packages that are missing.
# On success prints three lines: code-server binary, chromium binary, .vsix path.
set -euo pipefail

CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.100.3}"
# @vscode/ripgrep (a code-server dependency) first looks for its download in this cache directory;
# a tarball of the system rg there keeps its postinstall off the network.
VSCODE_RIPGREP_VERSION=1.15.11
RIPGREP_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
CACHE="${LSP_AGENT_CACHE:-$HOME/.cache/lsp-agent}"
CS_DIR="$CACHE/code-server-$CODE_SERVER_VERSION"
HERE="$(cd "$(dirname "$0")" && pwd)"
CLIENT="$(dirname "$HERE")"
VSIX="$CLIENT/lsp-agent.vsix"
# Build tools and headers for code-server's native modules (node-pty, kerberos, keytar, native-keymap).
APT_PACKAGES=(chromium build-essential pkg-config libkrb5-dev libsecret-1-dev libxkbfile-dev libx11-dev python3 ripgrep)

log() { printf '[vscode_e2e_install] %s\n' "$*" >&2; }
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

missing_apt() {
  local p missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  echo "${missing[@]:-}"
}

if command -v dpkg-query >/dev/null 2>&1; then
  missing="$(missing_apt)"
  if [ -n "$missing" ]; then
    log "apt-get install $missing"
    # shellcheck disable=SC2086
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
fi

CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$CHROMIUM" ] || { log "no chromium binary"; exit 1; }
command -v rg >/dev/null 2>&1 || { log "no rg (ripgrep) binary"; exit 1; }

install_code_server() {
  local work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  mkdir -p "$work/tmp/vscode-ripgrep-cache-$VSCODE_RIPGREP_VERSION" "$work/rgpkg"
  cp "$(command -v rg)" "$work/rgpkg/rg"
  tar -czf "$work/tmp/vscode-ripgrep-cache-$VSCODE_RIPGREP_VERSION/$RIPGREP_ASSET" -C "$work/rgpkg" rg
  rm -rf "$CS_DIR.tmp" && mkdir -p "$CS_DIR.tmp"
  log "npm install code-server@$CODE_SERVER_VERSION (native modules build from source: a few minutes)"
  # --unsafe-perm: as root, npm would otherwise run the postinstall scripts as nobody.
  # npm_config_yes: node-pty's postinstall runs `npx node-gyp`, which would prompt.
  (cd "$CS_DIR.tmp" && TMPDIR="$work/tmp" npm_config_yes=true \
    npm install --no-save --unsafe-perm --loglevel=error "code-server@$CODE_SERVER_VERSION" >"$work/npm.log" 2>&1) \
    || { tail -n 60 "$work/npm.log" >&2; exit 1; }
  "$CS_DIR.tmp/node_modules/.bin/code-server" --version >/dev/null
  rm -rf "$CS_DIR" && mv "$CS_DIR.tmp" "$CS_DIR"  # publish whole or not at all
}

mkdir -p "$CACHE"
[ -x "$CS_DIR/node_modules/.bin/code-server" ] || install_code_server

# The .vsix, rebuilt when any source is newer (vsce comes with the client's devDependencies); it
# carries the lsp-agent wheel of this checkout (scripts/carry-wheel.sh), so the Python side counts too.
REPO="$(dirname "$CLIENT")"
if [ ! -f "$VSIX" ] || [ -n "$(find "$CLIENT/src" "$CLIENT/media" "$CLIENT/package.json" "$CLIENT/.vscodeignore" "$REPO/lsp_agent" "$REPO/pyproject.toml" -newer "$VSIX" -print -quit)" ]; then
  [ -x "$CLIENT/node_modules/.bin/vsce" ] || (cd "$CLIENT" && npm ci --loglevel=error >&2)
  log "packaging $VSIX"
  (cd "$CLIENT" && npm run --silent package >&2)
fi

echo "$CS_DIR/node_modules/.bin/code-server"
echo "$CHROMIUM"
echo "$VSIX"
