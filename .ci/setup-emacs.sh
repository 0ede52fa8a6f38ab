#!/usr/bin/env bash
# Installs Emacs 30 (with its built-in eglot) for tests/clients/test_emacs.py from Debian's
# bookworm-backports suite: Debian 12's own emacs-nox is 28.2, whose eglot 1.9 the package does not
# support. Adds the backports suite to apt's sources when no source lists it, refreshes only that
# suite's index (once), installs emacs-nox from it. Idempotent and quiet: does nothing when an
# Emacs >= 29 is already on PATH (or at $AGENT_EDIT_EMACS). Fails loudly, never skips, when no
# Emacs >= 29 can be had: the Emacs tests are part of the suite.
set -euo pipefail

MIN_MAJOR=29
SUITE=bookworm-backports
SOURCES=/etc/apt/sources.list.d/agent-edit-bookworm-backports.sources

log() { echo "setup-emacs: $*"; }
fail() { echo "setup-emacs: $*" >&2; exit 1; }

# The major version of the Emacs at $1, or nothing when it does not run.
emacs_major() {
  "$1" --batch -Q --eval '(princ emacs-major-version)' 2>/dev/null || true
}

good_emacs() {
  local bin="$1" major
  [ -n "$bin" ] && [ -x "$bin" ] || return 1
  major="$(emacs_major "$bin")"
  [ -n "$major" ] && [ "$major" -ge "$MIN_MAJOR" ]
}

if good_emacs "${AGENT_EDIT_EMACS:-}" || good_emacs "$(command -v emacs || true)"; then
  exit 0
fi

[ "$(id -u)" = 0 ] || fail "Emacs >= $MIN_MAJOR is not installed and installing it needs root (apt)."
command -v apt-get >/dev/null || fail "Emacs >= $MIN_MAJOR is not installed and there is no apt-get."
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] \
  || fail "this installer knows Debian 12 (bookworm) only; install Emacs >= $MIN_MAJOR by hand."

export DEBIAN_FRONTEND=noninteractive
# Other jobs on the machine may hold apt's locks: wait for them instead of failing.
APT_OPTS=(-q -o DPkg::Lock::Timeout=600)
apt_log="$(mktemp)"
trap 'rm -f "$apt_log"' EXIT

if ! grep -rqs -- "$SUITE" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  # The same mirror as the machine's own Debian entry, so a local mirror keeps being used.
  uri="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
  [ -n "$uri" ] || uri="$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' \
    /etc/apt/sources.list 2>/dev/null || true)"
  [ -n "$uri" ] || uri=http://deb.debian.org/debian
  log "adding $SUITE ($uri) to apt's sources"
  cat >"$SOURCES" <<EOF
# Added by agent-edit's .ci/setup-emacs.sh: Emacs 30 for the Emacs client's tests.
Types: deb
URIs: $uri
Suites: $SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
fi

# Only the backports index is refreshed: the other sources' indexes are left as they are (and a
# third-party source that cannot be reached here cannot fail this step).
src_file="$(grep -rls -- "$SUITE" /etc/apt/sources.list.d/ | head -n 1 || true)"
update_opts=()
if [ -n "$src_file" ]; then
  update_opts=(-o "Dir::Etc::sourcelist=$src_file" -o Dir::Etc::sourceparts=- \
    -o APT::Get::List-Cleanup=0)
fi
log "installing emacs-nox from $SUITE (apt)"
if ! { apt-get "${APT_OPTS[@]}" "${update_opts[@]}" update \
  && apt-get "${APT_OPTS[@]}" install -y --no-install-recommends -t "$SUITE" emacs-nox; } \
  >"$apt_log" 2>&1; then
  cat "$apt_log" >&2
  fail "could not install emacs-nox from $SUITE (output above)."
fi

good_emacs "$(command -v emacs || true)" \
  || fail "emacs-nox from $SUITE installed, but no Emacs >= $MIN_MAJOR runs: $(emacs --version 2>&1 | head -n 1)"
log "$(emacs --version | head -n 1)"
