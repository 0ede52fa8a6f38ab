"""Probe attacks on `agent-edit mcp`'s stdio wire (raw JSON-RPC lines; the SDK's own client
cannot send these).

- A byte that is not UTF-8 inside a tool's text argument: the SDK's stdin decoded it as U+FFFD
  and the replace was applied, writing U+FFFD into the file for bytes the agent never meant
  (the CLI refuses the same bytes INVALID_ARGUMENT). It must be refused, naming the argument.
- The same byte in the request's id or method: answered as before (the SDK's U+FFFD), never
  dropped.
- A tool call nested deeper than the SDK's JSON parser reads (about 200 levels): the SDK dropped
  the line with no reply, so the client waited forever. It must get INVALID_ARGUMENT.
"""

from __future__ import annotations

import json

from tests.mcp.test_review_surrogates import RawMcp


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
