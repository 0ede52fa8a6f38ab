"""A workspace folder whose name is near the 255-byte limit still gets a state folder.

The state folder is named `<workspace name>-<16 hex digits>`: for a workspace named over 238
bytes that was over 255, so it could not be created and every command there (`read` too) was
refused IO_ERROR with a hint about disk space and permissions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lsp_server.engine.state import workspace_state_path
from tests.cli.test_cli_atomic import cli


def test_a_workspace_with_a_255_byte_name_can_be_edited(tmp_path: Path) -> None:
    state = tmp_path / "state"
    root = tmp_path / ("é" * 127)  # 254 bytes
    root.mkdir()
    (root / "a.txt").write_text("hi\n")
    proc = cli("replace", "--root", str(root), "--json", "a.txt", "hi", "HI", state=state)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["ok"] is True
    assert (root / "a.txt").read_text() == "hi\n".upper()
    (made,) = (state / "workspaces").iterdir()
    assert len(os.fsencode(made.name)) <= 255
    assert made.name.startswith("é" * 100)


def test_a_name_that_fits_keeps_its_state_folder(tmp_path: Path) -> None:
    for name in ("ws", "w" * 238):
        root = tmp_path / name
        root.mkdir()
        folder = Path(workspace_state_path(root, str(tmp_path / "state")))
        assert folder.name.rsplit("-", 1)[0] == name
        assert len(folder.name.rsplit("-", 1)[1]) == 16
