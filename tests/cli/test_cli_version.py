"""`agent-edit --version`: what editor clients run to check an interpreter before `serve`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lsp_server import __version__

REPO = Path(__file__).resolve().parents[2]

# A Python that has agent-edit on its path but not pygls (the newcomer's system python3 with a
# checkout on PYTHONPATH): pygls is made unfindable before the CLI runs.
NO_PYGLS = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "pygls" or name.startswith("pygls."):
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Block())
sys.argv = ["agent-edit", "--version"]
from lsp_server.cli import main
raise SystemExit(main())
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=REPO, timeout=60
    )


def test_version_names_the_version_python_and_pygls() -> None:
    out = _run("-m", "lsp_server", "--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"agent-edit {__version__} (Python ")
    assert sys.executable in out.stdout and "pygls " in out.stdout
    # It does not load the server to answer.
    assert out.stderr == ""


def test_version_without_pygls_fails_and_says_what_to_install() -> None:
    out = _run("-c", NO_PYGLS)
    assert out.returncode == 1
    assert out.stdout == ""
    assert "not pygls" in out.stderr and "virtual environment" in out.stderr
    assert "Traceback" not in out.stderr


def test_version_is_only_the_exact_flag() -> None:
    out = _run("-m", "lsp_server", "history", "--version")
    assert out.returncode == 2  # argparse: an unknown option of a subcommand, not the version
