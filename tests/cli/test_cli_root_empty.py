"""`--root ''` is a usage error, not the current folder.

`os.path.realpath("")` is the current folder, so `agent-edit replace --root "$WS" ...` with
`WS` unset edited (and `mcp --root ''` served) wherever the command happened to run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "argv",
    [
        ["replace", "--root", "", "a.txt", "one", "ONE"],
        ["write", "--root=", "a.txt", "ONE\n"],
        ["read", "--root", "", "a.txt"],
        ["mcp", "--root", ""],
    ],
)
def test_an_empty_root_is_refused_and_the_current_folder_is_left_alone(
    tmp_path: Path, argv: list[str]
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "a.txt").write_text("one\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "--root is empty" in proc.stderr, proc.stderr
    assert proc.stdout == ""
    assert (cwd / "a.txt").read_text() == "one\n"
    assert sorted(p.name for p in cwd.iterdir()) == ["a.txt"]
