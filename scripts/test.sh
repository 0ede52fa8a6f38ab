#!/usr/bin/env bash
# Install agent-edit with its test tools in .venv, install what the real-editor tests need
# (.ci/setup-*.sh), then lint, type-check and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
export PATH="$PWD/.venv/bin:$PATH"
# compat mode: a plain path in a .pth, as an installed package costs at start-up; the default
# editable finder adds ~20 ms to every Python start (each server and CLI a test or bench runs).
python -m pip install -q --disable-pip-version-check -e '.[test]' \
  --config-settings editable_mode=compat 2>&1 | grep -v "^WARNING: Location" || true
for setup in .ci/setup-*.sh; do
  [ -e "$setup" ] || continue
  echo "== $setup"
  bash "$setup"
done
echo "== ruff"
ruff check .
echo "== mypy --strict (engine)"
mypy
echo "== pytest"
# pytest exits 5 when it collected no tests; set -e turns that into a failure too.
python -m pytest "$@"
