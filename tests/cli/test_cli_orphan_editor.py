"""The CLI beside an editor whose agent-edit server died while the editor runs (an orphan,
lsp_server/discovery.py): which files that editor has open, maybe with unsaved text, is
unknown, so the CLI writes no file in its workspace folders on disk (CONFLICT, reason
EDITOR_SERVER_GONE), as `agent-edit mcp` does; reads work; once the editor is gone the edit
lands. Found: the CLI wrote the file under the buffer (helper-25 fixed the MCP side only).

And an orphan whose editor started a new agent-edit server (restarted it) is no orphan: the new
server knows what its editor has open, so its old announcement is removed and refuses nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lsp_server import discovery

REPO = Path(__file__).resolve().parents[2]


def _announce(run: Path, root: Path, pid: int, start: str | None, editor_pid: int) -> Path:
    body = {
        "pid": pid,
        "start": start,
        "folders": [str(root)],
        "historyRoot": str(root),
        "endpoint": {"unix": "gone.sock"},
        "token": "t" * 40,
        "editor": "Neovim",
        "editorPid": editor_pid,
        "started": 1.0,
    }
    path = run / f"{discovery.PREFIX}{pid}-0000.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, json.dumps(body).encode())
    finally:
        os.close(fd)
    return path


def _dead_pid() -> int:
    ended = subprocess.Popen([sys.executable, "-c", ""])
    ended.wait()
    return ended.pid


def _cli(tmp_path: Path, run: Path, root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {
        "PYTHONPATH": str(REPO),
        "AGENT_EDIT_STATE_DIR": str(tmp_path / "state"),
        discovery.ENV_DIR: str(run),
    }
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *argv, "--json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_cli_writes_nothing_in_the_folders_of_an_editor_whose_server_died(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    editor = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    try:
        announcement = _announce(run, root, _dead_pid(), "0", editor.pid)
        got = _cli(tmp_path, run, root, "replace", "a.py", "x = 1", "x = 2")
        assert got.returncode == 1, got
        result = json.loads(got.stdout)
        assert result["code"] == "CONFLICT", result
        assert result["details"]["reason"] == "EDITOR_SERVER_GONE", result
        assert "Neovim" in result["message"] and "Nothing was changed" in result["message"]
        assert (root / "a.py").read_text() == "x = 1\n"
        read = _cli(tmp_path, run, root, "read", "a.py")
        assert read.returncode == 0 and json.loads(read.stdout)["ok"], read
        assert announcement.exists()
    finally:
        assert editor.stdin is not None
        editor.stdin.close()
        editor.wait()
    got = _cli(tmp_path, run, root, "replace", "a.py", "x = 1", "x = 2")
    assert got.returncode == 0, got
    assert (root / "a.py").read_text() == "x = 2\n"
    assert not announcement.exists()


def test_an_orphan_whose_editor_runs_a_new_server_is_taken_over(tmp_path: Path) -> None:
    """The editor (this test process) restarted its agent-edit server: the new one is alive
    (this process, as `discovery.servers` sees it), so the dead one's file goes and the
    orphans list stays empty."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    root = tmp_path / "ws"
    root.mkdir()
    me = os.getpid()
    old = _announce(run, root, _dead_pid(), "0", me)
    _announce(run, root, me, discovery._start_time(me), me)
    env = os.environ.get(discovery.ENV_DIR)
    os.environ[discovery.ENV_DIR] = str(run)
    try:
        orphans: list[discovery.Entry] = []
        discovery.servers(orphans)
    finally:
        if env is None:
            del os.environ[discovery.ENV_DIR]
        else:
            os.environ[discovery.ENV_DIR] = env
    assert orphans == []
    assert not old.exists()
