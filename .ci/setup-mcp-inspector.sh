#!/usr/bin/env bash
# Installs the MCP Inspector CLI (npm @modelcontextprotocol/inspector 2.12.0) for
# tests/mcp/test_inspector.py: tools/list and a tools/call against `agent-edit mcp`, asserted on
# its JSON output and exit status. Into $AGENT_EDIT_MCP_INSPECTOR (default
# /opt/agent-edit-mcp-inspector) so a machine kept between sessions reuses it. It runs on Node 20
# despite its engines field. Idempotent and quiet; fails loudly when it cannot be had, so the
# Inspector test never skips silently in CI.
set -euo pipefail

VERSION=2.12.0
TOOLS="${AGENT_EDIT_MCP_INSPECTOR:-/opt/agent-edit-mcp-inspector}"
DIR="$TOOLS/inspector-$VERSION"
BIN="$DIR/node_modules/.bin/mcp-inspector"

if [ ! -x "$BIN" ]; then
  echo "setup-mcp-inspector: installing @modelcontextprotocol/inspector@$VERSION (npm)"
  mkdir -p "$DIR"
  npm install --silent --no-audit --no-fund --engine-strict=false --prefix "$DIR" \
    "@modelcontextprotocol/inspector@$VERSION" >/dev/null
fi
if [ ! -x "$BIN" ]; then
  echo "setup-mcp-inspector: $BIN is missing after the install" >&2
  exit 1
fi
