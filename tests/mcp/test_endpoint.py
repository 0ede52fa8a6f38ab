"""The language server's endpoint (lsp/endpoint.py) as another process sees it: found through
discovery, token checked, actions run like executeCommand, one session per caller."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess

import pytest

from lsp_server import discovery
from tests.editor_client import Editor, server_config


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def call(entry: discovery.Entry, action: str, args: dict, session: str = "s1") -> dict:
    return await discovery.arequest(entry, {"session": session, "action": action, "args": args}, 10)


def raw_request(entry: discovery.Entry, payload: bytes) -> dict:
    path = discovery.socket_path(entry)
    assert path is not None
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(payload)
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


@pytest.mark.asyncio
async def test_found_and_reads_the_unsaved_buffer(vscode: Editor):
    vscode.write_file("a.py", "x = 1\n")
    vscode.open("a.py")
    vscode.type("a.py", 0, 5, "  # typed, unsaved")
    entry = discovery.find(str(vscode.root / "sub"))  # a path inside the workspace
    assert entry is not None
    assert entry.editor == "Visual Studio Code"
    # Round-trip through the LSP first, so the didChange is surely handled.
    await vscode.command("agentEdit.read", {"path": "a.py"})
    got = await call(entry, "read", {"path": "a.py"})
    assert got["ok"] and got["source"] == "buffer"
    assert got["text"] == "x = 1  # typed, unsaved\n"


def _lsp(proc: subprocess.Popen, msg: dict) -> None:
    body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
    assert proc.stdin is not None
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def _read_lsp(proc: subprocess.Popen) -> dict:
    assert proc.stdout is not None
    length = 0
    while (line := proc.stdout.readline().strip()) != b"":
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))


def test_announcement_is_private_and_removed_at_exit(tmp_path):
    proc = subprocess.Popen(
        server_config().server_command,
        env=server_config().server_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        uri = tmp_path.as_uri()
        _lsp(
            proc,
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": os.getpid(),
                    "rootUri": uri,
                    "capabilities": {},
                    "clientInfo": {"name": "Neovim"},
                    "workspaceFolders": [{"uri": uri, "name": "ws"}],
                },
            },
        )
        assert "result" in _read_lsp(proc)
        entry = discovery.find(str(tmp_path))
        assert entry is not None and entry.pid == proc.pid
        assert entry.editor == "Neovim" and entry.editor_pid == os.getpid()
        st = os.stat(os.path.join(entry.folder, entry.name))
        assert st.st_mode & 0o777 == 0o600
        assert os.stat(entry.folder).st_mode & 0o777 == 0o700
        sock = discovery.socket_path(entry)
        assert sock and os.stat(sock).st_mode & 0o077 == 0
        _lsp(proc, {"id": 2, "method": "shutdown"})
        _read_lsp(proc)
        _lsp(proc, {"method": "exit"})
        assert proc.wait(30) == 0
        assert not os.path.exists(os.path.join(entry.folder, entry.name))
        assert not os.path.exists(sock)
        assert discovery.find(str(tmp_path)) is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.asyncio
@pytest.mark.parametrize("token", [None, "", "0" * 64, 12])
async def test_wrong_or_missing_token_is_refused(vscode: Editor, token):
    vscode.write_file("a.py", "x = 1\n")
    entry = discovery.find(str(vscode.root))
    assert entry is not None
    msg: dict = {"session": "s", "action": "replace"}
    msg["args"] = {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}
    if token is not None:
        msg["token"] = token
    got = raw_request(entry, json.dumps(msg).encode() + b"\n")
    assert got["ok"] is False and got["code"] == "DENIED"
    assert "token" in got["message"]
    assert (vscode.root / "a.py").read_text() == "x = 1\n"


@pytest.mark.asyncio
async def test_hostile_bytes_get_a_refusal_and_the_server_keeps_serving(vscode: Editor):
    vscode.write_file("a.py", "x = 1\n")
    entry = discovery.find(str(vscode.root))
    assert entry is not None
    for junk in (b"\xff\xfe{\n", b"[1, 2]\n", b"{" * 100000 + b"\n"):
        got = raw_request(entry, junk)
        assert got["ok"] is False
    got = await call(entry, "frobnicate", {})
    assert got["code"] == "INVALID_ARGUMENT"
    got = await call(entry, "replace", {"path": "a.py", "oldText": 3})
    assert got["code"] == "INVALID_ARGUMENT"
    got = await call(entry, "read", {"path": "a.py"})
    assert got["ok"]


@pytest.mark.asyncio
async def test_a_versioned_edit_lands_in_the_buffer_and_the_editors_history(vscode: Editor):
    vscode.write_file("a.py", "x = 1\ny = 2\n")
    vscode.open("a.py")
    vscode.type("a.py", 1, 5, "  # mine")
    entry = discovery.find(str(vscode.root))
    assert entry is not None
    await vscode.command("agentEdit.read", {"path": "a.py"})
    got = await call(entry, "replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 3"})
    assert got["ok"], got
    assert vscode.text("a.py") == "x = 3\ny = 2  # mine\n"
    assert (vscode.root / "a.py").read_text() == "x = 1\ny = 2\n"  # the buffer, not the disk
    hist = await vscode.command("agentEdit.history", {})
    assert [e["id"] for e in hist["entries"]][-1] == got["editId"]


@pytest.mark.asyncio
async def test_each_session_has_its_own_reads(vscode: Editor):
    vscode.write_file("a.py", "x = 1\n")
    vscode.open("a.py")
    entry = discovery.find(str(vscode.root))
    assert entry is not None
    got = await call(entry, "read", {"path": "a.py"}, session="agent-1")
    assert got["ok"]
    vscode.type("a.py", 0, 0, "# user\n")
    await vscode.command("agentEdit.read", {"path": "a.py"})  # the editor's own session reads
    # agent-1 read before the typing: its whole-file write is STALE...
    got = await call(entry, "write", {"path": "a.py", "text": "z = 0\n"}, session="agent-1")
    assert got["code"] == "STALE", got
    # ...agent-2 never read it: refused for that (no read), not allowed by another's read.
    got = await call(entry, "write", {"path": "a.py", "text": "z = 0\n"}, session="agent-2")
    assert got["ok"] is False, got
    assert vscode.text("a.py") == "# user\nx = 1\n"
    # The editor's own session read after the typing: its write lands.
    got = await vscode.command("agentEdit.write", {"path": "a.py", "text": "z = 0\n"})
    assert got["ok"], got


@pytest.mark.asyncio
async def test_announcement_follows_workspace_folder_changes(vscode: Editor, tmp_path_factory):
    from lsprotocol import types as t

    other = tmp_path_factory.mktemp("other")
    assert discovery.find(str(other)) is None
    vscode.client.workspace_did_change_workspace_folders(
        t.DidChangeWorkspaceFoldersParams(
            event=t.WorkspaceFoldersChangeEvent(
                added=[t.WorkspaceFolder(uri=other.as_uri(), name="other")],
                removed=[t.WorkspaceFolder(uri=vscode.root.as_uri(), name="ws")],
            )
        )
    )
    await vscode.command("agentEdit.history", {})  # handled in order: the change is done
    entry = discovery.find(str(other))
    assert entry is not None and entry.history_root == os.path.realpath(vscode.root)
    assert discovery.find(str(vscode.root)) is None  # a folder it no longer serves
