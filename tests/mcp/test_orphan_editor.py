"""An editor's agent-edit server that died before this MCP server ever reached it left its
announcement behind, and the editor (with its buffers, maybe unsaved) still runs. Nothing said
which files that editor has open, so the disk side must not write any file in its workspace
folders while it runs (CONFLICT, reason EDITOR_SERVER_GONE, and a note on every call); reads
work; once the editor is gone too, the disk is the truth again and the edit lands.

Found: discovery removed the dead server's file and the MCP server wrote the file on disk with
nothing said, under a buffer whose save would then overwrite the edit (or the other way round).
The dead server is an announcement written as a server writes it, with the pid of a process
that has ended; the editor, a child process that waits.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server import discovery
from lsp_server.engine import files
from lsp_server.mcp.router import Router


def _announce_dead_server(run: Path, root: Path, editor_pid: int) -> Path:
    ended = subprocess.Popen([sys.executable, "-c", ""])
    ended.wait()
    body = {
        "pid": ended.pid,
        "start": "0",  # never a live process's start time: a reused pid is not taken for it
        "folders": [str(root)],
        "historyRoot": str(root),
        "endpoint": {"unix": "gone.sock"},
        "token": "t" * 40,
        "editor": "Neovim",
        "editorPid": editor_pid,
        "started": 1.0,
    }
    path = run / f"{discovery.PREFIX}{ended.pid}-0000.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, json.dumps(body).encode())
    finally:
        os.close(fd)
    return path


def _replace(router: Router, root: Path) -> dict[str, object]:
    sha = hashlib.sha256((root / "a.py").read_bytes()).hexdigest()
    args = {"path": "a.py", "oldText": "x = 1", "newText": "x = 2", "expect": {"sha256": sha}}
    return asyncio.run(router.call("replace", args))


def test_a_dead_server_never_reached_keeps_disk_writes_off_its_editors_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv(discovery.ENV_DIR, str(run))
    monkeypatch.setenv(files.STATE_DIR_ENV, str(tmp_path / "state"))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    editor = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    try:
        announcement = _announce_dead_server(run, root, editor.pid)
        router = Router(str(root))
        got = _replace(router, root)
        assert got["code"] == "CONFLICT", got
        assert got["details"]["reason"] == "EDITOR_SERVER_GONE", got  # type: ignore[index]
        assert "Neovim" in str(got["message"]) and "gone" in str(got["note"]), got
        assert (root / "a.py").read_text() == "x = 1\n"
        read = asyncio.run(router.call("read", {"path": "a.py"}))
        assert read["ok"] and read["via"] == "disk", read
        assert announcement.exists()  # kept while the editor runs, for every looker
    finally:
        assert editor.stdin is not None
        editor.stdin.close()
        editor.wait()
    # The editor is gone, its buffers with it: the disk is the truth again.
    got = _replace(router, root)
    assert got["ok"] and got["via"] == "disk" and "note" not in got, got
    assert (root / "a.py").read_text() == "x = 2\n"
    assert not announcement.exists()
