"""A refusal's `details.lines` as the command line prints it: an AMBIGUOUS result's line
numbers, an undo CONFLICT's differing lines; any other code's `lines` (a read's refused line
range carries the file's line count, an int) is left to its message. Printing that int as a
list raised TypeError: a traceback in place of the refusal."""

from __future__ import annotations

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


def test_a_refused_line_range_is_said_without_a_traceback(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n")
    for rng in (["--start-line", "5", "--end-line", "2"], ["--start-line=-3"]):
        proc = cli(root, tmp_path / "state", "read", *rng, "a.txt")
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == 1, proc.stderr
        assert "INVALID_ARGUMENT" in proc.stderr and "a.txt has 2 lines" in proc.stderr


def test_an_undo_conflict_names_each_line_that_differs(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n")
    assert cli(root, state, "replace", "a.txt", "two", "TWO").returncode == 0
    (root / "a.txt").write_text("one\nTWO!\n")  # the user changed the edited line since
    proc = cli(root, state, "undo", "1")
    assert proc.returncode == 1 and "CONFLICT" in proc.stderr, proc.stderr
    assert "a.txt line 2: expected 'TWO', now 'TWO!'" in proc.stderr
    assert "matching lines" not in proc.stderr
    assert (root / "a.txt").read_text() == "one\nTWO!\n"


def test_an_ambiguous_match_lists_its_line_numbers(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("x\ny\nx\n")
    proc = cli(root, tmp_path / "state", "replace", "a.txt", "x", "z")
    assert proc.returncode == 1 and "matching lines: 1, 3" in proc.stderr, proc.stderr


def test_reads_help_says_where_the_sha256_is(tmp_path: Path) -> None:
    """`read`'s help promised the file "with its sha256", which only --json prints: the
    plain output is the text, as `cat` gives it."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    plain = cli(root, tmp_path / "state", "read", "a.txt")
    assert plain.stdout == "one\n"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    top = subprocess.run(
        [sys.executable, "-m", "lsp_server", "--help"], capture_output=True, text=True, env=env
    )
    said = " ".join(top.stdout.split())
    assert "with its sha256" not in said and "--json adds its sha256" in said
