"""`agent-edit apply-patch` whose disk writer meets an OS error it did not expect: the CLI exits
with its refusal status and a message saying what happened, never a traceback, and the history
entry is settled by that run (actions/execute.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.editor_client import REPO

# The CLI, in a fresh process, with the writer's test hook raising OSError(EIO) at one step.
RUN = """
import errno, sys
from lsp_server import cli
from lsp_server.engine import files
point = sys.argv[1]
def hook(at, path):
    global point
    if at == point:
        point = None
        raise OSError(errno.EIO, "Input/output error (injected)")
files.TEST_HOOK = hook
sys.exit(cli.main(sys.argv[2:]))
"""

PATCH = """*** Begin Patch
*** Update File: a.txt
@@
-two
+TWO
*** End Patch
"""


def cli(
    point: str, state: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    return subprocess.run(
        [sys.executable, "-c", RUN, point, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("point", ["resolved", "written"])
def test_an_os_error_in_the_writer_is_a_refusal_not_a_traceback(tmp_path: Path, point: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\ntwo\n")
    state = tmp_path / "state"
    done = cli(point, state, "apply-patch", "--root", str(ws), "-", stdin=PATCH)
    assert done.returncode == 1, (done.stdout, done.stderr)
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert "IO_ERROR" in out and "nothing was changed" in out, out
    assert (ws / "a.txt").read_text() == "one\ntwo\n"
    assert [p.name for p in ws.iterdir()] == ["a.txt"]  # no temporary file left
    # The entry is settled by that run: a plain history lists it as IO_ERROR.
    listed = cli("none", state, "history", "--root", str(ws), "--json")
    assert listed.returncode == 0, listed.stderr
    assert '"outcome": "IO_ERROR"' in listed.stdout, listed.stdout
    assert "interrupted" not in listed.stdout + listed.stderr
