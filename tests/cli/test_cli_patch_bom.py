"""A patch file that starts with a UTF-8 byte order mark (saved by Notepad or PowerShell 5)
is applied as the patch it shows: the mark was read as part of the first line, which was
then refused as not '*** Begin Patch' while it showed exactly that."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.editor_client import REPO

PATCH = b"*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** End Patch\n"


def cli(
    root: Path, state: Path, *args: str, stdin: bytes = b""
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args, "--root", str(root)],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_a_patch_file_with_a_byte_order_mark_applies(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (tmp_path / "p.patch").write_bytes(b"\xef\xbb\xbf" + PATCH)
    proc = cli(root, state, "apply-patch", str(tmp_path / "p.patch"))
    assert proc.returncode == 0, proc.stderr
    assert (root / "a.txt").read_text() == "ONE\n"
    back = PATCH.replace(b"-one\n+ONE", b"-ONE\n+one")
    proc = cli(
        root, state, "apply-patch", "-", stdin=b"\xef\xbb\xbf" + back.replace(b"\n", b"\r\n")
    )
    assert proc.returncode == 0, proc.stderr
    assert (root / "a.txt").read_text() == "one\n"
