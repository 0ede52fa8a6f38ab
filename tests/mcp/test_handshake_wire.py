"""`agent-edit mcp` on a raw stdio wire, with the early initialize answer (mcp/handshake.py):
- the answer comes while the SDK is held back from loading (the AGENT_EDIT_MCP_SDK_GATE hook),
  and `notifications/initialized` and `tools/list` sent right after are answered once it has
  loaded, in order, with the SDK's own answer to initialize dropped;
- the SDK's own client works through it;
- for every other opening (another request first, a malformed, huge, CR-split or unterminated
  first line, a batch, notifications first, EOF, two initialize requests) the wire carries
  exactly what the SDK alone writes (lsp_server.mcp.server.main without the early reader).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from lsp_server.mcp import handshake
from tests.mcp.mcp_helpers import mcp_env

BOUND_S = 120  # a failure bound only: a server that never answers fails the test, not hangs it
SDK_ALONE = "import sys; from lsp_server.mcp.server import main; sys.exit(main(sys.argv[1]))"


def msg(request_id: Any, method: str, params: Any = None) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        m["id"] = request_id
    if params is not None:
        m["params"] = params
    return json.dumps(m).encode() + b"\n"


def init(request_id: Any = 1, version: str = "2025-11-25", **info: str) -> bytes:
    client = {"name": "wire", "version": "0", **info}
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": client}
    return msg(request_id, "initialize", params)


INITIALIZED = msg(None, "notifications/initialized")


@contextmanager
def spawn(root: Path, early: bool = True, gate: Path | None = None) -> Iterator[Any]:
    env = mcp_env() if gate is None else {**mcp_env(), handshake.SDK_GATE_ENV: str(gate)}
    cmd = ["-m", "lsp_server", "mcp", "--root", str(root)]
    if not early:
        cmd = ["-c", SDK_ALONE, str(root)]
    proc = subprocess.Popen(
        [sys.executable, *cmd],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(root),
    )

    def give_up() -> None:
        proc.kill()
        if gate is not None:  # a server that never opened the gate: release open_gate
            os.close(os.open(gate, os.O_RDONLY | os.O_NONBLOCK))

    watchdog = threading.Timer(BOUND_S, give_up)
    watchdog.start()
    try:
        yield proc
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()


def answered_id(line: bytes) -> Any:
    message = json.loads(line)
    assert "method" not in message, line
    return message["id"]


def talk(root: Path, script: bytes, expect: list[Any], early: bool) -> tuple[list[bytes], bytes]:
    """Every line the server writes for `script`: read until each id in `expect` is answered,
    then stdin is closed and the rest read to EOF (closing at once would race the SDK's
    cancelling of requests still in flight at EOF)."""
    with spawn(root, early) as proc:
        proc.stdin.write(script)
        proc.stdin.flush()
        lines: list[bytes] = []
        waiting = list(expect)
        while waiting:
            line = proc.stdout.readline()
            assert line, (lines, proc.stderr.read())
            lines.append(line)
            waiting.remove(answered_id(line))
        proc.stdin.close()
        lines += proc.stdout.readlines()
        err = proc.stderr.read()
        assert proc.wait() == 0, err
    return lines, err


def tools_list_names(line: bytes) -> list[str]:
    return [t["name"] for t in json.loads(line)["result"]["tools"]]


def open_gate(gate: Path) -> None:
    # Blocks until the server holds the FIFO open for reading: it opens it before it imports
    # the SDK and waits there for this byte.
    with open(gate, "wb") as fifo:
        fifo.write(b"x")


def release_gate(gate: Path) -> int:
    """The gate's byte, written without blocking (O_RDWR on a FIFO never waits for a reader);
    the descriptor must stay open until the server has read it (a FIFO nobody holds drops it)."""
    fd = os.open(gate, os.O_RDWR)
    os.write(fd, b"x")
    return fd


def test_initialize_answered_before_the_sdk_loads_then_the_sdk_takes_over(tmp_path):
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    with spawn(tmp_path, gate=gate) as proc:
        proc.stdin.write(init(1, "2025-06-18"))
        proc.stdin.flush()
        first = proc.stdout.readline()  # the SDK is held at the gate: this is the early answer
        assert first == handshake.reply(1, "2025-06-18")
        proc.stdin.write(INITIALIZED + msg(2, "tools/list") + msg(3, "ping"))
        proc.stdin.flush()
        open_gate(gate)
        second, third = proc.stdout.readline(), proc.stdout.readline()
        assert answered_id(second) == 2 and len(tools_list_names(second)) == 6
        assert json.loads(third) == {"jsonrpc": "2.0", "id": 3, "result": {}}
        proc.stdin.close()
        assert proc.stdout.read() == b""  # the SDK's own initialize answer was dropped
        assert proc.wait() == 0
        assert b"differs" not in proc.stderr.read()


def test_the_sdks_own_client_through_the_early_answer(tmp_path):
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    env = {**mcp_env(), handshake.SDK_GATE_ENV: str(gate)}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lsp_server", "mcp", "--root", str(tmp_path)],
        env=env,
        cwd=str(tmp_path),
    )

    held: list[int] = []

    async def run() -> None:
        with anyio.fail_after(BOUND_S):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                done = await s.initialize()  # answered with the SDK held at the gate
                assert done.server_info.name == "agent-edit"
                assert done.instructions == handshake.INSTRUCTIONS
                held.append(release_gate(gate))
                tools = (await s.list_tools()).tools
                assert len(tools) == 6
                (tmp_path / "a.txt").write_text("one\n")
                res = await s.call_tool("read", {"path": "a.txt"})
                assert res.structured_content and res.structured_content["ok"], res

    try:
        anyio.run(run)
    finally:
        for fd in held:
            os.close(fd)


BIG = "x" * (handshake.FIRST_LINE_LIMIT + 10)
OPENINGS = {
    "plain, pipelined": (init() + INITIALIZED + msg(2, "tools/list"), [1, 2]),
    "EOF before initialize": (b"", []),
    "initialize, then EOF": (init(), [1]),
    "another request first": (msg(7, "tools/list") + init() + msg(2, "ping"), [7, 1, 2]),
    "ping first": (msg(7, "ping") + init() + msg(2, "ping"), [7, 1, 2]),
    "malformed first line": (b"{\n" + init() + msg(2, "ping"), [1, 2]),
    "empty first line": (b"\n" + init() + msg(2, "ping"), [1, 2]),
    "a batch first": (b"[" + init().strip() + b"]\n" + init(5) + msg(2, "ping"), [5, 2]),
    "notifications first": (INITIALIZED + msg(None, "x/y") + init() + msg(2, "ping"), [1, 2]),
    "a huge first line": (init(1, title=BIG) + INITIALIZED + msg(2, "tools/list"), [1, 2]),
    "a lone CR splits it": (init().replace(b", ", b",\r ", 1) + init(4) + msg(2, "ping"), [4, 2]),
    "CRLF": (init().replace(b"\n", b"\r\n") + msg(2, "ping"), [1, 2]),
    "no newline, then EOF": (init().strip(), []),
    "two initialize, one id": (init(1) + init(1, "2024-11-05") + msg(2, "ping"), [1, 1, 2]),
    "two initialize": (init(1) + INITIALIZED + init(9) + msg(2, "ping"), [1, 9, 2]),
    "a lone surrogate": (init().replace(b'"wire"', b'"w\\udc00"') + msg(2, "ping"), [1, 2]),
    "unsupported version": (init(1, "1999-01-01") + msg(2, "ping"), [1, 2]),
    "not UTF-8": (init().replace(b'"wire"', b'"w\xff"') + msg(2, "ping"), [1, 2]),
}


@pytest.mark.parametrize("opening", list(OPENINGS))
def test_the_wire_carries_what_the_sdk_alone_writes(tmp_path, opening):
    script, expect = OPENINGS[opening]
    alone, _ = talk(tmp_path, script, expect, early=False)
    early, err = talk(tmp_path, script, expect, early=True)
    # The SDK answers concurrent requests in any order; the first answer is always initialize's.
    assert early[:1] == alone[:1]
    assert sorted(early) == sorted(alone)
    assert b"differs" not in err


def test_a_closed_wire_before_the_answer_ends_quietly(tmp_path):
    # The client leaves before reading: the early write fails, and the SDK meets the same
    # closed wire as it would alone (no traceback, exit 0).
    outcomes = []
    for early in (False, True):
        with spawn(tmp_path, early) as proc:
            proc.stdout.close()
            proc.stdin.write(init() + INITIALIZED + msg(2, "tools/list"))
            proc.stdin.close()
            err = proc.stderr.read()
            outcomes.append((proc.wait(), b"Traceback" in err))
    assert outcomes[1] == outcomes[0] == (0, False), outcomes


STRAY = """
import os, sys
from lsp_server.mcp import handshake
early = handshake.start()
print("stray print", flush=True)
os.write(1, b"stray write\\n")
early.done.wait()
"""


def test_stray_output_after_the_wire_is_taken_goes_to_stderr(tmp_path):
    # Whatever writes to fd 1 once the wire is taken (an import's print, a child process)
    # lands on stderr: the wire carries the answer alone.
    proc = subprocess.run(
        [sys.executable, "-c", STRAY],
        input=init(),
        capture_output=True,
        env=mcp_env(),
        cwd=str(tmp_path),
        timeout=BOUND_S,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == handshake.reply(1, "2025-11-25")
    assert b"stray print\n" in proc.stderr and b"stray write\n" in proc.stderr
