"""SIGTERM in the middle of an apply (what a harness sends a command it times out) is taken as
Ctrl-C: the files renamed so far are put back before the process exits (143), the history
entry says nothing was applied, and no journal is left for the next command. With the default
action the process died there, and the files already renamed stayed new on disk until the
next agent-edit command rolled them back: not all or nothing for whoever looked in between."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.editor_client import REPO

# The CLI, with a hook that sends this process SIGTERM right after the second rename.
RUN = """
import os, signal, sys
from lsp_server import cli
from lsp_server.engine import files

renamed = []

def hook(point, path):
    if point == "renamed":
        renamed.append(path)
        if len(renamed) == 2:
            os.kill(os.getpid(), signal.SIGTERM)

files.TEST_HOOK = hook
sys.argv = ["agent-edit", *sys.argv[1:]]
cli.program()
"""


def test_sigterm_mid_apply_rolls_back_before_the_exit(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    sections = []
    for i in range(4):
        (root / f"f{i}.txt").write_text(f"old {i}\n")
        sections.append(f"*** Update File: f{i}.txt\n@@\n-old {i}\n+new {i}\n")
    patch = "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    proc = subprocess.run(
        [sys.executable, "-c", RUN, "apply-patch", "--root", str(root), "-"],
        input=patch,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 143, proc.stderr
    assert "terminated (SIGTERM)" in proc.stderr and "Traceback" not in proc.stderr
    # Every file as it was, right away: not left for the next command to roll back.
    assert {p.name: p.read_text() for p in root.iterdir()} == {
        f"f{i}.txt": f"old {i}\n" for i in range(4)
    }
    assert not list(state.rglob("journal.json"))
    hist = subprocess.run(
        [sys.executable, "-m", "lsp_server", "history", "--json", "--root", str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert "rolled back an interrupted apply" not in hist.stderr, hist.stderr
    (entry,) = json.loads(hist.stdout)["entries"]
    assert entry["ok"] is False and entry["outcome"] != "applied", entry
    assert entry["error"]["message"].startswith("The edit was stopped (SIGTERM)"), entry["error"]
    assert "nothing was changed" in entry["error"]["message"]
