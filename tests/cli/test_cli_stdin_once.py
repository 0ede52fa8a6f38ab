"""`agent-edit replace PATH @- @-`: standard input can be read once, so NEW would be read as
empty and the replace would silently delete OLD. It is a usage error, and nothing changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.editor_client import REPO


def test_old_and_new_both_from_stdin_is_a_usage_error(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello world\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(tmp_path / "state"))
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "replace", "--root", str(root), "a.txt", "@-", "@-"],
        input="world",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2, proc
    assert "standard input" in proc.stderr and "OLD and NEW" in proc.stderr, proc.stderr
    assert (root / "a.txt").read_text() == "hello world\n"
