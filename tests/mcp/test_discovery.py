"""Attacks on the discovery folder (lsp_server/discovery.py): a runtime folder that is a symbolic
link, another user's or too open is refused; files that are not ours, too open, malformed, of a
dead pid or of a reused pid are never trusted (the dead ones are removed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lsp_server import discovery

TOKEN = "t" * 64


@pytest.fixture
def rundir(tmp_path, monkeypatch):
    d = tmp_path / "run"
    monkeypatch.setenv(discovery.ENV_DIR, str(d))
    return d


def announce_for(pid: int, folder: str, start: str | None = "same", name: str = "") -> str:
    """An announcement written as server `pid` would (start time: its own, or `start`)."""
    d = discovery.runtime_dir()
    _, fname = discovery.announce([folder], {"unix": "x.sock"}, TOKEN, "Neovim", None, name or None)
    path = os.path.join(d, fname)
    raw = json.loads(open(path).read())
    raw["pid"] = pid
    raw["start"] = discovery._start_time(pid) if start == "same" else start
    with open(path, "w") as f:
        json.dump(raw, f)
    return path


def test_own_live_announcement_is_found(rundir, tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        announce_for(child.pid, str(tmp_path))
        found = discovery.find(str(tmp_path / "deep" / "er"))
        assert found is not None and found.pid == child.pid and found.token == TOKEN
        assert discovery.find(str(tmp_path.parent)) is None  # root outside its workspace
    finally:
        child.kill()
        child.wait()


def test_dead_pid_is_ignored_and_removed(rundir, tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    path = announce_for(child.pid, str(tmp_path), start=None)
    assert discovery.find(str(tmp_path)) is None
    assert not os.path.exists(path)


def test_reused_pid_is_ignored_and_removed(rundir, tmp_path):
    """The pid is alive, but it is another process than the one that announced (start time)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path = announce_for(child.pid, str(tmp_path), start="1")
        assert discovery.find(str(tmp_path)) is None
        assert not os.path.exists(path)
    finally:
        child.kill()
        child.wait()


def test_symlinked_runtime_folder_is_refused(tmp_path, monkeypatch):
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    link = tmp_path / "run"
    link.symlink_to(real)
    monkeypatch.setenv(discovery.ENV_DIR, str(link))
    with pytest.raises(discovery.DiscoveryError, match="not a plain folder"):
        discovery.servers()
    with pytest.raises(discovery.DiscoveryError):
        discovery.announce([str(tmp_path)], {"unix": "x.sock"}, TOKEN)
    assert list(real.iterdir()) == []  # nothing written through the link


def test_too_open_runtime_folder_is_refused(tmp_path, monkeypatch):
    d = tmp_path / "run"
    d.mkdir()
    d.chmod(0o755)
    monkeypatch.setenv(discovery.ENV_DIR, str(d))
    with pytest.raises(discovery.DiscoveryError, match="open to other users"):
        discovery.servers()
    with pytest.raises(discovery.DiscoveryError):
        discovery.announce([str(tmp_path)], {"unix": "x.sock"}, TOKEN)


@pytest.mark.skipif(
    os.geteuid() != 0 and not os.environ.get("CI"),  # CI runs as root: there it must run
    reason="needs root to make another user's files",
)
def test_another_users_folder_and_files_are_refused(rundir, tmp_path):
    announce_for(os.getpid(), str(tmp_path))
    # A file another user planted (same content, their uid) is never trusted.
    (name,) = [n for n in os.listdir(rundir) if n.endswith(".json")]
    os.chown(rundir / name, 12345, 12345)
    assert discovery.servers() == []
    os.chown(rundir / name, 0, 0)
    os.chown(rundir, 12345, 12345)
    with pytest.raises(discovery.DiscoveryError, match="belongs to uid 12345"):
        discovery.servers()


def test_open_or_linked_or_malformed_files_are_not_trusted(rundir, tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path = announce_for(child.pid, str(tmp_path))
        os.chmod(path, 0o644)  # readable by others: its token may be known
        assert discovery.servers() == []
        os.chmod(path, 0o600)
        assert len(discovery.servers()) == 1
        # A symbolic link to a good announcement is not one.
        os.rename(path, str(tmp_path / "real.json"))
        os.symlink(str(tmp_path / "real.json"), path)
        assert discovery.servers() == []
        os.unlink(path)
        for body in (b"", b"[]", b"{}", b'{"pid": "1"}', b"\xff" * 10, b"{" * 70000):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, body)
            os.close(fd)
            assert discovery.servers() == []
    finally:
        child.kill()
        child.wait()


def test_socket_name_from_a_file_never_leaves_the_runtime_folder(rundir, tmp_path):
    entry = discovery.Entry(1, (str(tmp_path),), TOKEN, {"unix": "../../etc/x"}, folder=str(rundir))
    assert discovery.socket_path(entry) is None
    with pytest.raises(OSError):
        discovery.request(entry, {"action": "hello"})


def test_missing_runtime_folder_means_no_servers(rundir):
    assert discovery.servers() == []
    assert not rundir.exists()  # looking never creates it


@pytest.mark.parametrize("pid", [2**31, 2**40])
def test_a_pid_no_process_can_have_is_dead_not_a_crash(rundir, tmp_path, pid):
    # os.kill raised OverflowError for it, out of `servers()`: every MCP start and editor
    # discovery crashed on one such file (ours, 0600: written by hand or by a broken writer).
    path = announce_for(pid, str(tmp_path), start=None)
    assert discovery.servers() == []
    assert not os.path.exists(path)


def test_an_editor_pid_no_process_can_have_is_gone_not_a_crash():
    # The router asks whether a lost server's editor still runs before refusing a file it held
    # open; an editorPid past the C int raised OverflowError out of every such apply.
    from lsp_server.mcp.router import _pid_alive

    assert not _pid_alive(2**40)
    assert _pid_alive(os.getpid())
