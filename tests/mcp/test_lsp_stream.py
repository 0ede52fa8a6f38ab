"""The LSP stream stays clean while other processes use the server's endpoint: a raw editor
client parses every byte the server writes to stdout (Content-Length framing, JSON-RPC 2.0)
while 300 MCP calls (reads of an unsaved buffer, edits on disk, history) go through it."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.editor_client import server_config
from tests.mcp.mcp_helpers import call, mcp_session


class RawEditor:
    """An LSP client that checks each message the server sends and answers its requests."""

    def __init__(self) -> None:
        config = server_config()
        self.proc = subprocess.Popen(
            config.server_command,
            env=config.server_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.lock = threading.Lock()
        self.messages: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.answers: dict[int, threading.Event] = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        assert self.proc.stdin is not None
        with self.lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def request(self, id: int, method: str, params: Any) -> None:
        self.answers[id] = threading.Event()
        self.send({"id": id, "method": method, "params": params})
        assert self.answers[id].wait(30), method

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                name, _, value = line.decode("ascii", "replace").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
                elif name.lower() != "content-type":
                    self.problems.append(f"not an LSP header: {line!r}")
            if length is None:
                self.problems.append("a message without Content-Length")
                continue
            body = out.read(length)
            try:
                msg = json.loads(body)
                assert isinstance(msg, dict) and msg.get("jsonrpc") == "2.0"
            except (ValueError, AssertionError):
                self.problems.append(f"not a JSON-RPC message: {body[:200]!r}")
                continue
            self.messages.append(msg)
            if "id" in msg and "method" in msg:  # a request of the server's: answer it
                self.send({"id": msg["id"], "result": None})
            elif "id" in msg and msg["id"] in self.answers:
                self.answers[msg["id"]].set()

    def stop(self) -> None:
        try:
            self.request(99999, "shutdown", None)
            self.send({"method": "exit"})
            self.proc.wait(30)
        finally:
            self.proc.kill()
            self.proc.wait()


@pytest.mark.asyncio
async def test_lsp_stdout_never_polluted_by_300_mcp_calls(tmp_path: Path):
    for i in range(100):
        (tmp_path / f"f{i}.txt").write_text(f"v{i}\n")
    (tmp_path / "open.txt").write_text("saved\n")
    ed = RawEditor()
    try:
        uri = tmp_path.as_uri()
        ed.request(
            1,
            "initialize",
            {
                "processId": None,
                "rootUri": uri,
                "capabilities": {},
                "clientInfo": {"name": "raw"},
                "workspaceFolders": [{"uri": uri, "name": "ws"}],
            },
        )
        ed.send({"method": "initialized", "params": {}})
        ed.send(
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": (tmp_path / "open.txt").as_uri(),
                        "languageId": "plaintext",
                        "version": 1,
                        "text": "unsaved\n",
                    }
                },
            }
        )
        async with mcp_session(tmp_path) as s:
            for i in range(100):
                got, _ = await call(s, "read", {"path": "open.txt"})
                assert got["via"] == "editor" and got["text"] == "unsaved\n", got
                got, _ = await call(
                    s, "replace", {"path": f"f{i}.txt", "oldText": f"v{i}", "newText": f"w{i}"}
                )
                assert got["ok"] and got["via"] == "editor", got
                got, _ = await call(s, "history", {"limit": 1})
                assert got["ok"], got
        ed.request(
            2,
            "workspace/executeCommand",
            {"command": "agentEdit.history", "arguments": [{"limit": 1}]},
        )
    finally:
        ed.stop()
    assert ed.problems == []
    notes = [m for m in ed.messages if m.get("method") == "agentEdit/historyChanged"]
    assert len(notes) >= 100
    for i in range(100):
        assert (tmp_path / f"f{i}.txt").read_text() == f"w{i}\n"
