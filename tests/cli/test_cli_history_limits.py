"""What `history` says about what it cannot show. `--limit` with a negative count showed no
entry, and the CLI printed "no agent edits recorded in this workspace" over a journal full of
them; `--limit 0` did the same. A negative `limit` or `netLimit` is refused (INVALID_ARGUMENT,
exit 1); a listing cut to nothing says how many edits are recorded; an unreadable journal is
said, not shown as an empty history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.editor_client import REPO


def cli(root: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_history_limits(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n")
    assert cli(root, state, "replace", "a.txt", "one", "1").returncode == 0
    assert cli(root, state, "replace", "a.txt", "two", "2").returncode == 0
    for flag in ("--limit", "--net-limit"):
        for how in ((), ("--json",)):
            proc = cli(root, state, "history", *how, f"{flag}=-1")
            assert proc.returncode == 1, proc.stdout + proc.stderr
            assert "no agent edits recorded" not in proc.stdout
            assert "INVALID_ARGUMENT" in proc.stdout + proc.stderr
    none = cli(root, state, "history", "--limit", "0")
    assert none.returncode == 0, none.stderr
    assert none.stdout.strip() == "2 agent edit(s) recorded in this workspace, none shown (--limit)"
    listed = json.loads(cli(root, state, "history", "--json", "--limit", "1").stdout)
    assert [e["id"] for e in listed["entries"]] == [2] and listed["total"] == 2


def test_an_unreadable_journal_is_not_no_edits(tmp_path: Path) -> None:
    """A journal that cannot be read (a directory in its place) gave `entries: []` and the
    line "no agent edits recorded in this workspace": the answer now carries journalError."""
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    assert cli(root, state, "replace", "a.txt", "one", "1").returncode == 0
    (journal,) = state.rglob("journal.jsonl")
    journal.rename(tmp_path / "kept.jsonl")
    journal.mkdir()
    listed = json.loads(cli(root, state, "history", "--json").stdout)
    assert listed["entries"] == [] and "reading the journal failed" in listed["journalError"]
    proc = cli(root, state, "history")
    assert "no agent edits recorded" not in proc.stdout, proc.stdout
    assert "no agent edits could be read" in proc.stdout
    assert "reading the journal failed" in proc.stderr
