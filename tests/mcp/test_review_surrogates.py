"""Review attacks on `agent-edit mcp`'s stdio: a lone UTF-16 surrogate, which JSON can carry
(`\\ud800`; JavaScript's JSON.stringify writes one for a model's broken emoji) but UTF-8 cannot.

- In a tool's arguments: the SDK's strict parser dropped the line, so the call was never
  answered (the client waited forever). It must get INVALID_ARGUMENT naming the argument.
- In a result (the history records a refused request as it came, e.g. the CLI's argv with a
  byte that is not UTF-8): the SDK could not encode the answer and the MCP server died.
Raw JSON-RPC lines, since the SDK's own client cannot send a lone surrogate either."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.editor_client import REPO
from tests.mcp.mcp_helpers import mcp_env

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


class RawMcp:
    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lsp_server", "mcp", "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=mcp_env(),
            cwd=str(REPO),
        )
        # Lines read by a thread, so a server that hangs fails the test instead of blocking it.
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.send(json.dumps(INIT))
        assert json.loads(self.receive())["id"] == 0
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        self.next_id = 1

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(b"")

    def receive(self) -> bytes:
        try:
            return self.lines.get(timeout=60)
        except queue.Empty:
            raise AssertionError("the MCP server stopped answering") from None

    def call(self, raw_params: str) -> dict[str, Any]:
        """tools/call with params as raw JSON text; the answer (EOF fails the test: the server
        died)."""
        i = self.next_id
        self.next_id += 1
        self.send(f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{raw_params}}}')
        # A ping after it: an answer to the ping with none to the call means the call was dropped.
        self.send(json.dumps({"jsonrpc": "2.0", "id": f"ping{i}", "method": "ping"}))
        answers = {}
        while len(answers) < 2:
            line = self.receive()
            assert line, "the MCP server died"
            msg = json.loads(line)  # valid UTF-8 JSON
            answers[msg["id"]] = msg
            assert msg["id"] != f"ping{i}" or i in answers, "the call was dropped unanswered"
        return answers[i]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _text(answer: dict[str, Any]) -> str:
    return answer["result"]["content"][0]["text"]


def test_lone_surrogate_argument_is_refused_naming_it(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    mcp = RawMcp(tmp_path)
    try:
        got = mcp.call(
            '{"name":"replace","arguments":{"path":"a.py","oldText":"x = 1","newText":"y\\ud800"}}'
        )
        assert got["result"]["isError"] is True, got
        out = got["result"]["structuredContent"]
        assert out["code"] == "INVALID_ARGUMENT" and out["details"]["argument"] == "newText", out
        assert "surrogate" in _text(got)
        got = mcp.call('{"name":"read","arguments":{"path":"\\udc80.py"}}')
        assert got["result"]["isError"] is True, got
        # The server still serves.
        got = mcp.call('{"name":"read","arguments":{"path":"a.py"}}')
        assert got["result"]["structuredContent"]["text"] == "x = 1\n"
    finally:
        mcp.close()
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


def test_history_holding_a_lone_surrogate_is_answered(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    # The CLI's argv decodes a byte that is not UTF-8 as a lone surrogate; the refusal is in
    # the history with the request as it came.
    cli = subprocess.run(
        [sys.executable, "-m", "lsp_server", "replace", "--root", str(tmp_path)]
        + ["a.py", "x = 1", b"y\xff".decode("utf-8", "surrogateescape")],
        env=mcp_env(),
        capture_output=True,
        cwd=str(REPO),
    )
    assert cli.returncode != 0 and b"INVALID_ARGUMENT" in cli.stderr, cli
    mcp = RawMcp(tmp_path)
    try:
        got = mcp.call('{"name":"history","arguments":{}}')
        out = got["result"]["structuredContent"]
        assert out["ok"] and out["entries"][0]["outcome"] == "INVALID_ARGUMENT", out
        assert out["entries"][0]["args"]["newText"] == "y\\udcff"  # escaped, visible
        got = mcp.call('{"name":"read","arguments":{"path":"a.py"}}')
        assert got["result"]["structuredContent"]["text"] == "x = 1\n"
    finally:
        mcp.close()


def test_deeply_nested_line_with_an_escape_leaves_the_server_serving(tmp_path):
    """The reparse itself must not be a way in: Python's json raises RecursionError on deep
    nesting, which would end the server."""
    mcp = RawMcp(tmp_path)
    try:
        deep = "[" * 100_000 + "]" * 100_000
        mcp.send(
            '{"jsonrpc":"2.0","id":"deep","method":"ping","params":{"a":"\\u0041","b":'
            + deep
            + "}}"
        )
        mcp.send(json.dumps({"jsonrpc": "2.0", "id": "after", "method": "ping"}))
        while True:
            line = mcp.receive()
            assert line, "the MCP server died"
            if json.loads(line)["id"] == "after":
                break
    finally:
        mcp.close()
