#!/usr/bin/env bash
# Installs Codex 0.169.0's apply_patch for the differential tests (tests/engine/test_patch_fidelity.py)
# and bench/bench_patch.py: the npm package @openai/codex ships its native binary, which answers
# as apply_patch when called by that name. Into $AGENT_EDIT_CODEX_TOOLS (default
# /opt/agent-edit-codex) so a machine kept between sessions reuses it; bench/.codex/bin/apply_patch
# (gitignored) links to it. Idempotent and quiet; fails loudly when the binary cannot be had, so
# the Codex comparisons never skip silently in CI.
set -euo pipefail

VERSION=0.169.0
TOOLS="${AGENT_EDIT_CODEX_TOOLS:-/opt/agent-edit-codex}"
DIR="$TOOLS/codex-$VERSION"
REPO="$(cd "$(dirname "$0")/.." && pwd)"

find_bin() { ls "$DIR"/node_modules/@openai/codex*/vendor/*/bin/codex 2>/dev/null | head -n 1; }

bin="$(find_bin || true)"
if [ -z "$bin" ]; then
  echo "setup-codex: installing @openai/codex@$VERSION (npm)"
  mkdir -p "$DIR"
  npm install --silent --no-audit --no-fund --prefix "$DIR" "@openai/codex@$VERSION" >/dev/null
  bin="$(find_bin || true)"
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "setup-codex: Codex's native binary is missing from the npm package in $DIR" >&2
  exit 1
fi
mkdir -p "$REPO/bench/.codex/bin"
ln -sfn "$bin" "$REPO/bench/.codex/bin/apply_patch"
