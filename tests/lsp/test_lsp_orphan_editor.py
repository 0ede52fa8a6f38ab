"""The language server writing a file on disk (one its editor does not have open) beside
another editor whose agent-edit server died while that editor runs (an orphan,
lsp_server/discovery.py): which files that editor has open, maybe with unsaved text, is
unknown, so the disk is not written (CONFLICT, reason EDITOR_SERVER_GONE), as the CLI and
`agent-edit mcp` refuse it (lsp_server/peers.py). Before, the server wrote it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server import discovery
from tests.editor_client import server_config, start_session


def _announce_orphan(root: Path, editor_pid: int) -> Path:
    ended = subprocess.Popen([sys.executable, "-c", ""])
    ended.wait()
    body = {
        "pid": ended.pid,
        "start": "0",
        "folders": [str(root)],
        "historyRoot": str(root),
        "endpoint": {"unix": "gone.sock"},
        "token": "t" * 40,
        "editor": "Emacs",
        "editorPid": editor_pid,
        "started": 1.0,
    }
    path = Path(discovery.runtime_dir()) / f"{discovery.PREFIX}{ended.pid}-0000.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, json.dumps(body).encode())
    finally:
        os.close(fd)
    return path


@pytest.mark.asyncio
async def test_a_disk_write_in_the_folders_of_an_orphaned_editor_is_refused(tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    other_editor = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    announcement = _announce_orphan(root, other_editor.pid)
    client = await server_config().start()
    try:
        editor = await start_session(client, "neovim", root)
        got = await editor.command(
            "agentEdit.replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}
        )
        assert got["code"] == "CONFLICT", got
        assert got["details"]["reason"] == "EDITOR_SERVER_GONE", got
        assert "Emacs" in got["message"]
        assert (root / "a.py").read_text() == "x = 1\n"
        assert other_editor.stdin is not None
        other_editor.stdin.close()
        other_editor.wait()
        # That editor is gone, its buffers with it: the disk is the truth again.
        got = await editor.command(
            "agentEdit.replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}
        )
        assert got["ok"], got
        assert (root / "a.py").read_text() == "x = 2\n"
    finally:
        if other_editor.poll() is None:
            other_editor.kill()
            other_editor.wait()
        announcement.unlink(missing_ok=True)
        await client.shutdown_session()
        await client.stop()
