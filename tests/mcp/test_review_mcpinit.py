"""Review of `agent-edit mcp`'s start-up and server (branch rmcpinit): hostile lines after the
handshake must not end the server.

A lone UTF-16 surrogate escape (`"\\ud800"`) in a string id or an unknown method was parsed
again by surrogates.Repaired and handed to the SDK, which echoes it in its answer (the id;
METHOD_NOT_FOUND's data) and whose writer cannot encode it: the writer task failed and the
server ended (early path) or hung (SDK's own transport), so every later request went
unanswered. Such a line was then dropped, as the SDK alone drops it, which left its client
waiting for ever; it is now answered with a JSON-RPC error of our own, its id written back as
the escape it came as (mcp/dropped.py, tests/mcp/test_dropped_requests.py), and never run. One
in a tool's arguments or name is still refused by name (and one in the client's info still
answered: test_handshake_wire's "a lone surrogate" opening).
"""

from __future__ import annotations

import json

import pytest

from tests.mcp.test_handshake_wire import INITIALIZED, init, msg, talk

HOSTILE = {
    "unknown method": b'{"jsonrpc":"2.0","id":5,"method":"x\\ud800"}\n',
    "string id": b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}\n',
    "tools/call id": (
        b'{"jsonrpc":"2.0","id":"\\udc00","method":"tools/call",'
        b'"params":{"name":"read","arguments":{"path":"a"}}}\n'
    ),
}


# The id each line's error answer carries back (as JSON reads its escape).
IDS = {"unknown method": 5, "string id": "\ud800", "tools/call id": "\udc00"}


@pytest.mark.parametrize("where", list(HOSTILE))
def test_a_lone_surrogate_in_an_id_or_method_does_not_end_the_server(tmp_path, where):
    # On the wire (early initialize answer, then the SDK): the line gets a JSON-RPC error and
    # the ping after it is answered; before, the process ended with a traceback or hung.
    script = init(1) + INITIALIZED + HOSTILE[where] + msg(99, "ping")
    lines, err = talk(tmp_path, script, [1, IDS[where], 99], early=True)
    answers = [json.loads(line) for line in lines]
    assert [a["id"] for a in answers] == [1, IDS[where], 99]
    assert answers[1]["error"]["code"] == -32600, answers[1]
    assert b"Traceback" not in err


def test_a_lone_surrogate_in_the_arguments_is_still_refused_by_name(tmp_path):
    call = (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call",'
        b'"params":{"name":"write","arguments":{"path":"a.txt","text":"\\ud800"}}}\n'
    )
    lines, _ = talk(tmp_path, init(1) + INITIALIZED + call + msg(99, "ping"), [1, 7, 99], True)
    by_id = {json.loads(line)["id"]: json.loads(line) for line in lines}
    result = by_id[7]["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["code"] == "INVALID_ARGUMENT"
    assert "surrogate" in result["content"][0]["text"]
    assert not (tmp_path / "a.txt").exists()


def test_a_lone_surrogate_in_the_tool_name_is_refused_as_no_such_tool(tmp_path):
    call = (
        b'{"jsonrpc":"2.0","id":6,"method":"tools/call",'
        b'"params":{"name":"r\\ud800","arguments":{}}}\n'
    )
    lines, _ = talk(tmp_path, init(1) + INITIALIZED + call + msg(99, "ping"), [1, 6, 99], True)
    result = {json.loads(line)["id"]: json.loads(line) for line in lines}[6]["result"]
    assert result["isError"] is True and "There is no tool" in result["content"][0]["text"]
