"""Probe attacks on `agent-edit mcp`'s stdio wire (raw JSON-RPC lines; the SDK's own client
cannot send these).

- A byte that is not UTF-8 inside a tool's text argument: the SDK's stdin decoded it as U+FFFD
  and the replace was applied, writing U+FFFD into the file for bytes the agent never meant
  (the CLI refuses the same bytes INVALID_ARGUMENT). It must be refused, naming the argument.
- The same byte in the request's id or method: answered as before (the SDK's U+FFFD), never
  dropped.
- A tool call nested deeper than the SDK's JSON parser reads (about 200 levels): the SDK dropped
  the line with no reply, so the client waited forever. It must get INVALID_ARGUMENT.
- A client that disconnects before its answer: the edit ran and is in the history, but writing
  the answer raised BrokenPipeError in the SDK's writer task and the server died with a
  traceback, exit status 1. It must end as for any client that leaves.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.editor_client import REPO
from tests.mcp.mcp_helpers import mcp_env
from tests.mcp.test_review_surrogates import INIT, RawMcp


def _send_bytes(mcp: RawMcp, line: bytes) -> None:
    assert mcp.proc.stdin is not None
    mcp.proc.stdin.write(line + b"\n")
    mcp.proc.stdin.flush()


def _answers(mcp: RawMcp, until: str) -> dict[object, dict]:
    """Every answer up to the one whose id is `until` (a ping sent last)."""
    got: dict[object, dict] = {}
    while until not in got:
        line = mcp.receive()
        assert line, "the MCP server died"
        msg = json.loads(line)
        got[msg.get("id")] = msg
    return got


def test_text_argument_with_bytes_not_utf8_is_refused_not_written(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    mcp = RawMcp(tmp_path)
    try:
        _send_bytes(
            mcp,
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"replace",'
            b'"arguments":{"path":"a.py","oldText":"x","newText":"\xff\xfe"}}}',
        )
        _send_bytes(mcp, b'{"jsonrpc":"2.0","id":"ping","method":"ping"}')
        got = _answers(mcp, "ping")
        assert 1 in got, "the call was dropped unanswered"
        out = got[1]["result"]["structuredContent"]
        assert out["ok"] is False and out["code"] == "INVALID_ARGUMENT", out
        assert out["details"]["argument"] == "newText", out
        # The server still serves, and the file is as it was.
        after = mcp.call('{"name":"read","arguments":{"path":"a.py"}}')
        assert after["result"]["structuredContent"]["text"] == "x = 1\n"
    finally:
        mcp.close()
    assert (tmp_path / "a.py").read_bytes() == b"x = 1\n"


def test_bytes_not_utf8_in_id_or_method_are_still_answered(tmp_path):
    mcp = RawMcp(tmp_path)
    try:
        _send_bytes(mcp, b'{"jsonrpc":"2.0","id":"a\xffb","method":"ping"}')
        _send_bytes(mcp, b'{"jsonrpc":"2.0","id":7,"method":"tools/c\xffll","params":{}}')
        _send_bytes(mcp, b'{"jsonrpc":"2.0","id":"ping","method":"ping"}')
        got = _answers(mcp, "ping")
        assert "a\ufffdb" in got and "result" in got["a\ufffdb"], got
        assert 7 in got and "error" in got[7], got
    finally:
        mcp.close()


def test_tool_call_nested_too_deep_is_answered_and_changes_nothing(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    mcp = RawMcp(tmp_path)
    try:
        for depth in (300, 100_000):  # past the SDK's limit; past Python's recursion limit
            deep = "[" * depth + "]" * depth
            got = mcp.call(
                '{"name":"write","arguments":{"path":"a.py","text":"pwned\\n",'
                f'"expect":{{"sha256":{deep}}}}}}}'
            )
            out = got["result"]["structuredContent"]
            assert out["ok"] is False and out["code"] == "INVALID_ARGUMENT", out
            assert out["details"]["argument"] == "arguments", out
            assert "nested deeper" in got["result"]["content"][0]["text"]
        # The server still serves.
        got = mcp.call('{"name":"read","arguments":{"path":"a.py"}}')
        assert got["result"]["structuredContent"]["text"] == "x = 1\n"
    finally:
        mcp.close()
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


def test_client_that_disconnects_before_the_answer_leaves_the_edit_recorded(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "mcp", "--root", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=mcp_env(),
        cwd=str(REPO),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(INIT).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 0
        # Gone before the call is even sent: its answer has nowhere to go (no race).
        proc.stdout.close()
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "replace",
                "arguments": {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"},
            },
        }
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.write(json.dumps(call).encode() + b"\n")
        proc.stdin.close()
        assert proc.stderr is not None
        err = proc.stderr.read()  # until the server ends
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    assert b"Traceback" not in err, err.decode(errors="replace")[-2000:]
    assert (tmp_path / "a.py").read_text() == "x = 2\n"
    history = subprocess.run(
        [sys.executable, "-m", "lsp_server", "history", "--root", str(tmp_path), "--json"],
        env=mcp_env(),
        capture_output=True,
        cwd=str(REPO),
        check=False,
    )
    entries = json.loads(history.stdout)["entries"]
    assert [(e["action"], e["outcome"]) for e in entries] == [("replace", "applied")], entries
