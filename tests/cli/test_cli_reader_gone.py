"""The CLI when standard output's reader goes away (`agent-edit history | head`, an agent's
pipe closed early): the command still runs to its end (the edit lands and is recorded), and it
leaves with status 120 and one line on stderr that says only the report was cut, never a
traceback that reads as if the edit had failed."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _tree(ws: Path, files: int) -> str:
    parts = ["*** Begin Patch"]
    for i in range(files):
        (ws / f"f{i}.txt").write_text(f"line {i}\nkeep\n")
        parts += [f"*** Update File: f{i}.txt", "@@", f"-line {i}", f"+LINE {i}"]
    parts.append("*** End Patch")
    return "\n".join(parts) + "\n"


def _run(tmp_path: Path, ws: Path, argv: list[str], stdin: str = "") -> tuple[int, str]:
    """Run the CLI with stdout a pipe whose reading end is already closed (the reader left)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "PYTHONPATH")}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(tmp_path / "state")}
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", *argv],
            input=stdin.encode(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=ws,
            env=env,
            timeout=120,
        )
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr.decode()


def _history(tmp_path: Path, ws: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(tmp_path / "state")}
    out = subprocess.run(
        [sys.executable, "-m", "lsp_server", "history", "--json"],
        cwd=ws,
        env=env,
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout
    return json.loads(out)


@pytest.mark.parametrize("files", [1, 300], ids=["report-in-the-buffer", "report-past-it"])
def test_an_apply_whose_reader_left_lands_and_says_only_the_report_was_cut(
    tmp_path: Path, files: int
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    rc, err = _run(tmp_path, ws, ["apply-patch", "-"], _tree(ws, files))
    assert "Traceback" not in err, err
    assert rc == 120, err
    assert "report was cut short" in err and "agent-edit history" in err
    assert (ws / f"f{files - 1}.txt").read_text() == f"LINE {files - 1}\nkeep\n"
    [entry] = _history(tmp_path, ws)["entries"]
    assert entry["outcome"] == "applied"


def test_history_piped_into_a_reader_that_left_is_no_traceback(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for _ in range(3):
        rc, _ = _run(tmp_path, ws, ["apply-patch", "-"], _tree(ws, 100))
    rc, err = _run(tmp_path, ws, ["history", "--format", "diff"])
    assert "Traceback" not in err, err
    assert rc == 120, err


def test_a_refusal_whose_reader_left_keeps_its_status(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+2\n*** End Patch\n"
    rc, err = _run(tmp_path, ws, ["apply-patch", "--json", "-"], patch)
    assert "Traceback" not in err, err
    assert rc == 1, err


def test_a_note_whose_reader_left_does_not_stop_the_command(tmp_path: Path) -> None:
    """Standard error a pipe whose reader left (`2>&1 | head -1` once the reader is done): the
    note that an interrupted apply was rolled back cannot be written, and the command goes on
    (the rollback recorded, the edit made, its result on stdout). The BrokenPipeError of that
    note ended the command before the edit, with status 120 ("only the report was cut")."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("old a\n")
    (ws / "b.txt").write_text("old b\n")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-old a\n+new a\n"
        "*** Update File: b.txt\n@@\n-old b\n+new b\n*** End Patch\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(tmp_path / "state")}
    crashed = subprocess.run(
        [sys.executable, "-m", "lsp_server", "apply-patch", "-"],
        input=patch.encode(),
        capture_output=True,
        cwd=ws,
        env=env | {"AGENT_EDIT_CRASH_AFTER": "3"},  # killed after the first rename
        timeout=120,
    )
    assert crashed.returncode != 0 and (ws / "a.txt").read_text() == "new a\n"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "replace", "--json", "a.txt", "old a", "A"],
            stdout=subprocess.PIPE,
            stderr=write_end,
            cwd=ws,
            env=env,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 0
    result = json.loads(proc.stdout)
    assert result["ok"] and result["recovered"], result
    assert (ws / "a.txt").read_text() == "A\n" and (ws / "b.txt").read_text() == "old b\n"
    outcomes = [e["outcome"] for e in _history(tmp_path, ws)["entries"]]
    assert outcomes[-1] == "applied", outcomes


def _run_on_hung_up_terminal(tmp_path: Path, ws: Path, argv: list[str], stdin: str) -> int:
    """Run the CLI with stdout and stderr on a terminal that was hung up (its pty master closed:
    every write gets EIO, as after the user closed the terminal window mid-command)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "PYTHONPATH")}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(tmp_path / "state")}
    master, slave = pty.openpty()
    os.close(master)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", *argv],
            input=stdin.encode(),
            stdout=slave,
            stderr=slave,
            cwd=ws,
            env=env,
            timeout=120,
        )
    finally:
        os.close(slave)
    return proc.returncode


def test_an_apply_whose_terminal_hung_up_lands_and_exits_as_a_cut_report(tmp_path: Path) -> None:
    """A write to a hung-up terminal fails with EIO, not EPIPE: the report of an edit that
    landed ended in a traceback and exit 1, which reads as a failed edit (one an agent sends
    again). Now the status says only the report was lost (120, as for a reader that left),
    and a refusal keeps its 1."""
    ws = tmp_path / "ws"
    ws.mkdir()
    assert _run_on_hung_up_terminal(tmp_path, ws, ["apply-patch", "-"], _tree(ws, 2)) == 120
    assert (ws / "f1.txt").read_text() == "LINE 1\nkeep\n"
    [entry] = _history(tmp_path, ws)["entries"]
    assert entry["outcome"] == "applied"
    refused = "*** Begin Patch\n*** Update File: f0.txt\n@@\n-nowhere\n+x\n*** End Patch\n"
    assert _run_on_hung_up_terminal(tmp_path, ws, ["apply-patch", "-"], refused) == 1
