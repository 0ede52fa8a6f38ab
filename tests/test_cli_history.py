"""The CLI records its edits in the workspace history; `history` and `undo` read that journal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.editor_client import REPO


def run(root: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_cli_history_and_undo(tmp_path):
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "f.txt").write_text("one\ntwo\n")
    assert run(root, state, "replace", "f.txt", "two", "2").returncode == 0
    refused = run(root, state, "replace", "--json", "f.txt", "nope", "x")
    assert refused.returncode == 1 and json.loads(refused.stdout)["details"]["editId"] == 2
    hist = json.loads(run(root, state, "history", "--json", "--diff").stdout)
    assert [(e["id"], e["outcome"]) for e in hist["entries"]] == [(1, "applied"), (2, "NO_MATCH")]
    assert "-two\n+2\n" in hist["net"][0]["diff"]
    (root / "f.txt").write_text("zero\none\n2\n")  # someone else edits around the agent's line
    undo = run(root, state, "undo", "--json", "1")
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert (root / "f.txt").read_text() == "zero\none\ntwo\n"
    again = run(root, state, "undo", "--json", "1")
    assert again.returncode == 1
    (root / "f.txt").write_text("x\n")
    conflict = run(root, state, "undo", "--json", "3")
    assert json.loads(conflict.stdout)["code"] == "CONFLICT"
