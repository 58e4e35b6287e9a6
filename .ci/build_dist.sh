#!/usr/bin/env bash
# The release artifacts: the sdist, then the wheel built FROM the sdist (what `python -m build` does
# by default, so a file the sdist leaves out is missing from the wheel too and the checks below
# fail), both checked by `twine check --strict` (metadata, the README as long description).
# Prints the wheel's path, the one line on stdout: the VS Code packaging carries that file.
#     bash .ci/build_dist.sh [OUTDIR]      (default: dist/ in the checkout, gitignored)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python -c 'import build, twine' 2>/dev/null; then
  echo "build_dist: this needs the build and twine packages: pip install -e '.[dev]' (or pip install build twine)" >&2
  exit 1
fi
out="$(realpath -m "${1:-dist}")"
mkdir -p "$out"
# only this build's files in OUTDIR, so the path printed is the one just built
rm -f "$out"/lsp_agent-*.whl "$out"/lsp_agent-*.tar.gz
# Built from a copy of the files git tracks (as they are in the working tree), never from the
# checkout itself:
# - setuptools reads a leftover lsp_agent.egg-info/SOURCES.txt (every `pip install -e .` writes one)
#   as the sdist's manifest, so a data file dropped from the package data still shipped from a
#   developer's or CI's checkout and the wheel looked complete when it was not;
# - a file nobody added to git (a scratch module, a `server/local.json` with a key in it) matches the
#   package's patterns and would ship to every user. A new module must be `git add`ed to be built.
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "build_dist: not a git checkout: the release is built from the files git tracks" >&2
  exit 1
fi
git ls-files -z --cached | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$src"
python -m build --outdir "$out" "$src" >&2
python -m twine check --strict "$out"/lsp_agent-*.whl "$out"/lsp_agent-*.tar.gz >&2
wheels=("$out"/lsp_agent-*.whl)
if [ "${#wheels[@]}" -ne 1 ]; then
  echo "build_dist: expected one wheel in $out, found ${#wheels[@]}" >&2
  exit 1
fi
echo "${wheels[0]}"
