"""Ctrl-C or SIGTERM that comes past an edit's commit point stops nothing: the edit landed, so
the command finishes its history entry ("applied"), prints the success result and exits 0,
with a line on stderr saying the signal came too late to stop it.

Raised there, the KeyboardInterrupt had the landed edit recorded UNVERIFIED ("these files may
have changed") and the command exit 130/143 with "interrupted; see `agent-edit history`", or,
once the entry said applied, the success report replaced by that line: an agent took an edit
that had landed for one that had not, and sent it again. A signal before the commit point
still stops the apply and rolls it back (tests/cli/test_cli_sigterm.py); a second signal past
it is not held (a report blocked on a full pipe must stay stoppable).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.editor_client import REPO

# The CLI, with a hook that sends this process the signal(s) named in $SEND at $POINT: right
# after the apply's commit point ("committed"), as the success report is printed ("printing"),
# or at a point of files.TEST_HOOK ("renamed": after each rename, before the commit point).
RUN = """
import os, signal, sys
from lsp_server import cli
from lsp_server.engine import files

sends = [getattr(signal, name) for name in os.environ["SEND"].split(",")]
point = os.environ["POINT"]

def send():
    for sig in sends:
        os.kill(os.getpid(), sig)

def hook(at, path):
    if at == point:
        send()

files.TEST_HOOK = hook
unlink = os.unlink

def unlink_then_send(path, *args, **kwargs):
    unlink(path, *args, **kwargs)
    if point == "committed" and str(path).endswith("journal.json"):
        send()  # right after the commit point: the apply journal's removal

os.unlink = unlink_then_send
printing = cli._print_success

def print_success(*args, **kwargs):
    if point == "printing":
        send()
    return printing(*args, **kwargs)

cli._print_success = print_success
sys.argv = ["agent-edit", *sys.argv[1:]]
cli.program()
"""


def _run(tmp_path: Path, point: str, send: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "a.txt").write_text("old\n")
    (root / "b.txt").write_text("old b\n")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n"
        "*** Update File: b.txt\n@@\n-old b\n+new b\n*** End Patch\n"
    )
    env = dict(
        os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state), SEND=send, POINT=point
    )
    proc = subprocess.run(
        [sys.executable, "-c", RUN, "apply-patch", "--root", str(root), "--json", "-"],
        input=patch,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return proc, root


def _outcomes(tmp_path: Path, root: Path) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(tmp_path / "state"))
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "history", "--root", str(root), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return [e["outcome"] for e in json.loads(proc.stdout)["entries"]]


@pytest.mark.parametrize("point", ["committed", "printing"])
@pytest.mark.parametrize("send", ["SIGTERM", "SIGINT"])
def test_a_signal_past_the_commit_point_reports_the_edit_as_applied(
    tmp_path: Path, point: str, send: str
) -> None:
    proc, root = _run(tmp_path, point, send)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["ok"] and result["status"] == "applied", result
    assert [f["path"] for f in result["files"]] == ["a.txt", "b.txt"]
    assert "did not stop the edit" in proc.stderr and "Traceback" not in proc.stderr
    assert (root / "a.txt").read_text() == "new\n" and (root / "b.txt").read_text() == "new b\n"
    assert _outcomes(tmp_path, root) == ["applied"]
    assert not list((tmp_path / "state").rglob("journal.json"))


def test_a_second_signal_past_the_commit_point_still_stops_the_command(tmp_path: Path) -> None:
    proc, root = _run(tmp_path, "printing", "SIGTERM,SIGTERM")
    assert proc.returncode == 143, proc.stderr
    assert "past the edit's commit point" in proc.stderr and "Traceback" not in proc.stderr
    assert (root / "a.txt").read_text() == "new\n" and (root / "b.txt").read_text() == "new b\n"
    assert _outcomes(tmp_path, root) == ["applied"]


def test_a_signal_before_the_commit_point_still_rolls_back(tmp_path: Path) -> None:
    """The control: at the last rename (before the commit point) it stops the apply."""
    proc, root = _run(tmp_path, "renamed", "SIGINT")
    assert proc.returncode == 130, proc.stderr
    assert "interrupted; see" in proc.stderr
    assert (root / "a.txt").read_text() == "old\n" and (root / "b.txt").read_text() == "old b\n"
