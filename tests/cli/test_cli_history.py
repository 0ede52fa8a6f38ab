"""The CLI's `history` and `undo` read the journal the server keeps for the workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lsp_server.engine.files import apply_plan, read_snapshot
from lsp_server.engine.history import open_history
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_replace
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


def record_agent_edit(root: Path, rel: str, old: str, new: str) -> int:
    """What the server does for an agent edit: journal it, apply it, finish it."""
    history = open_history(str(root))
    plan = Plan("replace", (plan_replace(read_snapshot(str(root), rel), old, new),))
    edit_id = history.begin(plan, {"path": rel, "oldText": old, "newText": new})
    apply_plan(str(root), plan)
    history.finish(edit_id, "applied")
    return edit_id


def test_cli_history_and_undo(tmp_path, monkeypatch):
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(state))
    (root / "f.txt").write_text("one\ntwo\n")
    edit_id = record_agent_edit(root, "f.txt", "two", "2")
    hist = json.loads(run(root, state, "history", "--json", "--diff").stdout)
    assert [(e["id"], e["outcome"]) for e in hist["entries"]] == [(edit_id, "applied")]
    assert "-two\n+2\n" in hist["net"][0]["diff"]
    text = run(root, state, "history")
    assert f"#{edit_id}" in text.stdout and "replace" in text.stdout
    (root / "f.txt").write_text("zero\none\n2\n")  # someone else edits around the agent's line
    undo = run(root, state, "undo", "--json", str(edit_id))
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert (root / "f.txt").read_text() == "zero\none\ntwo\n"
    again = run(root, state, "undo", "--json", str(edit_id))
    assert again.returncode == 1
    (root / "f.txt").write_text("x\n")
    conflict = run(root, state, "undo", "--json", str(json.loads(undo.stdout)["editId"]))
    assert json.loads(conflict.stdout)["code"] == "CONFLICT"
