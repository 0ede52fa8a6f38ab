"""`agent-edit --version` (and `python -m lsp_server --version`): what an editor client runs to
check an interpreter before starting the server with it.

It prints the version, the Python running it and the language-server library it found, and exits
1 with what to install when that library is missing: such a Python can run the headless commands
but not `serve`, and a client must say so instead of starting a server that dies at once. It only
looks the library up (no import), so the check is quick.
"""

from __future__ import annotations

import sys
from importlib import metadata, util

from lsp_server import __version__


def main() -> int:
    where = f"Python {sys.version.split()[0]} at {sys.executable}"
    try:
        found = util.find_spec("pygls") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        sys.stderr.write(
            f"agent-edit {__version__}: {where} has agent-edit but not pygls, which the language "
            "server needs. Install agent-edit with its dependencies into a virtual environment "
            "(python3 -m venv .venv && .venv/bin/pip install PATH-TO-agent-edit) and use that "
            "environment's python.\n"
        )
        return 1
    try:
        pygls = metadata.version("pygls")
    except metadata.PackageNotFoundError:
        pygls = "unknown version"
    sys.stdout.write(f"agent-edit {__version__} ({where}, pygls {pygls})\n")
    return 0
