"""Request lines the MCP SDK's reader drops with no reply get a JSON-RPC error (-32600) with
their id, so the client does not wait for ever: one nested deeper than its JSON parser reads (a
`ping` too, not only a tool call), one whose id or method holds a lone UTF-16 surrogate (the
SDK cannot write it back; the error carries the id as the escape it came as). None of them is
run, and the server goes on serving. A notification (no id) still gets nothing.

Found: each such request got no answer at all; the client hung. Raw JSON-RPC lines: the SDK's
own client cannot send them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.test_review_surrogates import RawMcp

DEEP = "[" * 1000 + "]" * 1000


def _answer_then_ping(mcp: RawMcp, line: str) -> list[dict[str, Any]]:
    """What the server writes for `line`, up to the answer of a ping sent after it (each answer
    valid UTF-8 JSON; the ping's comes last: answers are written in order here)."""
    mcp.send(line)
    mcp.send(json.dumps({"jsonrpc": "2.0", "id": "after", "method": "ping"}))
    out = []
    while True:
        raw = mcp.receive()
        assert raw, "the MCP server died"
        msg = json.loads(raw.decode("utf-8"))
        if msg.get("id") == "after":
            assert msg["result"] == {}, msg
            return out
        out.append(msg)


def _error(got: list[dict[str, Any]], ident: Any, text: str) -> None:
    assert len(got) == 1, got
    (msg,) = got
    assert msg["id"] == ident and "result" not in msg, msg
    assert msg["error"]["code"] == -32600, msg
    assert text in msg["error"]["message"], msg


@pytest.fixture
def mcp(tmp_path: Path):
    (tmp_path / "a.txt").write_text("old\n")
    server = RawMcp(tmp_path)
    try:
        yield server
    finally:
        server.close()
    assert (tmp_path / "a.txt").read_text() == "old\n"  # nothing was run


def test_a_ping_nested_too_deep_is_answered(mcp: RawMcp) -> None:
    line = '{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":' + DEEP + "}}"
    _error(_answer_then_ping(mcp, line), 5, "nested deeper")
    line = '{"jsonrpc":"2.0","id":"s","method":"tools/list","params":{"x":' + DEEP + "}}"
    _error(_answer_then_ping(mcp, line), "s", "nested deeper")


def test_a_notification_nested_too_deep_still_gets_nothing(mcp: RawMcp) -> None:
    line = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":' + DEEP + "}}"
    assert _answer_then_ping(mcp, line) == []


@pytest.mark.parametrize("method", ["ping", "tools/list"])
def test_an_id_with_a_lone_surrogate_is_answered_with_it(mcp: RawMcp, method: str) -> None:
    line = '{"jsonrpc":"2.0","id":"a\\ud800","method":"' + method + '"}'
    _error(_answer_then_ping(mcp, line), "a\ud800", "lone UTF-16 surrogate")


def test_a_tool_call_with_a_lone_surrogate_in_its_id_is_not_run(mcp: RawMcp) -> None:
    params = '{"name":"replace","arguments":{"path":"a.txt","oldText":"old","newText":"new"}}'
    line = '{"jsonrpc":"2.0","id":"\\udc80","method":"tools/call","params":' + params + "}"
    _error(_answer_then_ping(mcp, line), "\udc80", "it was not run")
    # Nested too deep as well: deep.py cannot hand that call on (its id): answered here.
    params = '{"name":"replace","arguments":{"path":"a.txt","expect":' + DEEP + "}}"
    line = '{"jsonrpc":"2.0","id":"\\udc80","method":"tools/call","params":' + params + "}"
    _error(_answer_then_ping(mcp, line), "\udc80", "Invalid Request")


def test_a_method_with_a_lone_surrogate_is_answered(mcp: RawMcp) -> None:
    line = '{"jsonrpc":"2.0","id":9,"method":"pi\\udc80ng"}'
    _error(_answer_then_ping(mcp, line), 9, "its method holds a lone UTF-16 surrogate")
