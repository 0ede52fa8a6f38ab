"""Review (rtrust): `agent-edit apply-patch` whose writer meets an exception that is not an
OSError (a UnicodeError, or Ctrl-C's KeyboardInterrupt) after the file a.txt was renamed into
place and before b.txt. Before the fix the CLI printed a traceback and left a.txt changed and
b.txt not, a temporary file beside them, until the next run. Now: a refusal or one line saying
it was interrupted, both files as they were, and the history entry settled by that run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.editor_client import REPO

RUN = """
import sys
from lsp_server import cli
from lsp_server.engine import files
kind = sys.argv[1]
def hook(at, path):
    global kind
    if at == "renamed" and kind:
        k, kind = kind, None
        if k == "interrupt":
            raise KeyboardInterrupt
        raise UnicodeEncodeError("utf-8", "x", 0, 1, "injected")
files.TEST_HOOK = hook
sys.exit(cli.main(sys.argv[2:]))
"""

PATCH = """*** Begin Patch
*** Update File: a.txt
@@
-two
+TWO
*** Update File: b.txt
@@
-two
+TWO
*** End Patch
"""


def cli(
    kind: str, state: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    return subprocess.run(
        [sys.executable, "-c", RUN, kind, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize(("kind", "status"), [("unicode", 1), ("interrupt", 130)])
def test_no_traceback_and_no_half_edit(tmp_path: Path, kind: str, status: int) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text("one\ntwo\n")
    state = tmp_path / "state"
    done = cli(kind, state, "apply-patch", "--root", str(ws), "-", stdin=PATCH)
    out = done.stdout + done.stderr
    assert done.returncode == status, out
    assert "Traceback" not in out, out
    if kind == "unicode":
        assert "IO_ERROR" in out and "nothing was changed" in out, out
    else:
        assert "interrupted" in out, out
    assert (ws / "a.txt").read_text() == (ws / "b.txt").read_text() == "one\ntwo\n"
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt", "b.txt"]
    listed = cli("", state, "history", "--root", str(ws), "--json")
    assert listed.returncode == 0, listed.stderr
    assert '"outcome": "IO_ERROR"' in listed.stdout, listed.stdout
    assert "interrupted" not in listed.stdout + listed.stderr
