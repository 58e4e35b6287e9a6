#!/usr/bin/env bash
# The package as a user installs it: build the sdist and the wheel from it (.ci/build_dist.sh, which
# also runs twine check --strict), install the wheel into a fresh venv with nothing else, and run
# `lsp-agent --version`, `lsp-agent demo` and an LSP initialize from a directory outside the
# checkout (tests/packaging/wheel_check.py; tests/packaging/test_wheel.py runs the same in pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
wheel="$(bash .ci/build_dist.sh)"
echo "built $wheel"
python tests/packaging/wheel_check.py "$wheel"
