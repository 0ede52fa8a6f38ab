"""A client that sends its requests and closes stdin at once (a script, a harness piping one
batch) gets every answer before `agent-edit mcp` exits. The SDK cancels the handlers still
running when it reads EOF: a tools/call was dropped with no answer, and once the edit had
already landed (the file changed, the client never told). lsp_server/mcp/drain.py holds the
EOF back until every request read has been answered."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.mcp.mcp_helpers import mcp_env

PATCH = "*** Begin Patch\n*** Update File: g.py\n-b = 1\n+b = 2\n*** End Patch\n"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "batch", "version": "1"},
    },
}


def _batch(root, calls: list[dict]) -> dict[int, dict]:
    msgs = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    msgs += [{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    msgs += [
        {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": c}
        for i, c in enumerate(calls)
    ]
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server", "mcp", "--root", str(root)],
        input="".join(json.dumps(m) + "\n" for m in msgs).encode(),  # then stdin closes
        capture_output=True,
        env=mcp_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    return {a["id"]: a for a in answers if "id" in a}


@pytest.mark.parametrize("round_", range(4))
def test_every_request_is_answered_when_stdin_closes_at_once(tmp_path, round_):
    (tmp_path / "f.py").write_text("a = 1\n")
    (tmp_path / "g.py").write_text("b = 1\n")
    answers = _batch(
        tmp_path,
        [
            {"name": "read", "arguments": {"path": "f.py"}},
            {
                "name": "replace",
                "arguments": {"path": "f.py", "oldText": "a = 1", "newText": "a = 2"},
            },
            {
                "name": "apply_patch",
                "arguments": {"patch": PATCH},
            },
        ],
    )
    assert set(answers) == {1, 2, 10, 11, 12}, answers
    for i in (10, 11, 12):
        assert answers[i]["result"]["isError"] is False, answers[i]
    # What the answers say is what the files show.
    assert (tmp_path / "f.py").read_text() == "a = 2\n"
    assert (tmp_path / "g.py").read_text() == "b = 2\n"


def test_a_request_the_client_cancelled_does_not_hold_the_exit(tmp_path):
    """A cancelled request gets no answer (MCP): it is not waited for after EOF either."""
    (tmp_path / "f.py").write_text("a = 1\n")
    msgs = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    msgs += [
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "history", "arguments": {}},
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 7, "reason": "the user changed their mind"},
        },
    ]
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server", "mcp", "--root", str(tmp_path)],
        input="".join(json.dumps(m) + "\n" for m in msgs).encode(),
        capture_output=True,
        env=mcp_env(),
        timeout=30,  # DRAIN_LIMIT_S is 180: a wait for the cancelled one would time out here
    )
    assert done.returncode == 0, done.stderr.decode()
