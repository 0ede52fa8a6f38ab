#!/usr/bin/env bash
# Install agent-edit in .venv and watch an agent edit an open buffer through the real server.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check . 2>&1 | grep -v "^WARNING: Location" || true
exec .venv/bin/python examples/demo.py
