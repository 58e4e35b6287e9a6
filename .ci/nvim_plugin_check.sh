#!/usr/bin/env bash
# The Neovim plugin as a user loads it: `packadd` from a pack/*/opt directory (a link to
# editors/nvim), `:helptags`, then `:checkhealth lsp_agent` with only the server's bin directory
# and the system's on PATH, on every Neovim found (Debian's, and the dev extra's newer one). Fails on
# any ERROR line or when the server's version is not the plugin's; prints each report.
#   bash .ci/nvim_plugin_check.sh [BIN_DIR_WITH_lsp-agent]   (default: where `lsp-agent` is found)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-$(dirname "$(command -v lsp-agent)")}"
expected="$(sed -n 's/^return "\(.*\)"$/\1/p' editors/nvim/lua/lsp_agent/version.lua)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/site/pack/plugins/opt" "$work/ws/.git"
cp -r editors/nvim "$work/site/pack/plugins/opt/lsp-agent" # a copy: :helptags writes doc/tags
rm -f "$work/site/pack/plugins/opt/lsp-agent/doc/tags"
cat >"$work/check.lua" <<'LUA'
vim.opt.packpath:prepend(vim.env.SITE)
vim.cmd("packadd lsp-agent")
vim.cmd("helptags ALL")
vim.cmd("checkhealth lsp_agent")
local f = assert(io.open(vim.env.REPORT, "w"))
f:write(table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"), "\n")
f:close()
vim.cmd("qa!")
LUA
status=0 seen="" n=0
for nvim in /usr/bin/nvim "$bin/nvim" "$(dirname "$(command -v python)")/nvim"; do
  [ -x "$nvim" ] || continue
  real="$(readlink -f "$nvim")"
  case " $seen " in *" $real "*) continue ;; esac # the same Neovim found twice
  seen="$seen $real" n=$((n + 1))
  report="$work/report-$n.txt"
  (cd "$work/ws" && SITE="$work/site" REPORT="$report" XDG_CONFIG_HOME="$work/config" \
    PATH="$bin:/usr/local/bin:/usr/bin:/bin" timeout 120 "$nvim" --headless --clean -n -i NONE \
    -c "luafile $work/check.lua" </dev/null >/dev/null 2>&1) || true
  echo "--- $("$nvim" --version | head -1): :checkhealth lsp_agent"
  if [ ! -s "$report" ]; then
    echo "no report (Neovim failed)"; status=1; continue
  fi
  cat "$report"
  if grep -q "ERROR" "$report"; then echo "FAILED: an ERROR line"; status=1; fi
  if ! grep -Eq "OK:? version $expected\$" "$report"; then echo "FAILED: the server is not version $expected"; status=1; fi
done
if [ "$n" -eq 0 ]; then echo "no Neovim found"; status=1; fi
exit "$status"
