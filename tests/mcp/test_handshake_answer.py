"""The early `initialize` answer (lsp_server/mcp/handshake.py) against the SDK's own: for each
first line, `answer` either declines (None) or gives exactly the bytes the SDK's server writes
for that line through its stdio transport. Every protocol version the SDK supports, an
unsupported one, and a few hundred hostile variants of a real client's request."""

from __future__ import annotations

import copy
import io
import json
import os
import sys
import threading
from typing import Any

import anyio
import pytest
from mcp.server.stdio import stdio_server
from mcp_types import version as sdk_versions

from lsp_server.mcp import handshake
from lsp_server.mcp.server import build
from lsp_server.mcp.surrogates import Repaired

# What the SDK's own client sends (mcp.client.session), and what the Inspector sends.
BASE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "sampling": {"context": {}, "tools": {}},
            "elicitation": {"form": {}, "url": {}},
            "roots": {"listChanged": True},
            "experimental": {"x": {"y": [1, 2.5, None, "z"]}},
        },
        "clientInfo": {"name": "mcp", "version": "0.1.0", "title": "Client"},
    },
}
ODD_VALUES: list[Any] = [None, True, 0, -1, 1.5, 2**70, "", "x", [], [1], {}, {"a": 1}]


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The SDK's reply bytes to `data` on stdin (then EOF), through its stdio transport with
    the text layer it puts on fd 0 (UTF-8, errors replaced, universal newlines)."""
    server = build(str(tmp_path_factory.mktemp("ws")))

    async def run(data: bytes) -> bytes:
        out = io.BytesIO()
        stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")
        stdout = io.TextIOWrapper(out, encoding="utf-8")
        async with stdio_server(anyio.wrap_file(stdin), anyio.wrap_file(stdout)) as (r, w):
            await server.run(Repaired(r), w, server.create_initialization_options())
        stdout.flush()
        return out.getvalue()

    return lambda data: anyio.run(run, data)


def first_reply(sdk: Any, line: bytes) -> bytes:
    out: bytes = sdk(line + b"\n")
    return out.split(b"\n", 1)[0] + b"\n" if out else b""


def line_of(message: Any) -> bytes:
    return json.dumps(message).encode()


def check(sdk: Any, line: bytes) -> bool:
    """The early answer to `line` is the SDK's, or there is none; whether there was one."""
    got = handshake.answer(line)
    if got is None:
        return False
    assert got[1] == first_reply(sdk, line), line
    return True


def test_versions_are_the_sdks() -> None:
    assert handshake.HANDSHAKE_VERSIONS == sdk_versions.HANDSHAKE_PROTOCOL_VERSIONS
    assert handshake.LATEST_HANDSHAKE == sdk_versions.LATEST_HANDSHAKE_VERSION


@pytest.mark.parametrize(
    "requested",
    [*sdk_versions.KNOWN_PROTOCOL_VERSIONS, "1999-01-01", "", "2025-11-25 ", "latest"],
)
def test_every_version_answered_as_the_sdk_does(sdk: Any, requested: str) -> None:
    message = copy.deepcopy(BASE)
    message["params"]["protocolVersion"] = requested
    assert check(sdk, line_of(message))
    negotiated = json.loads(handshake.answer(line_of(message))[1])["result"]["protocolVersion"]  # type: ignore[index]
    want = requested if requested in sdk_versions.HANDSHAKE_PROTOCOL_VERSIONS else "2025-11-25"
    assert negotiated == want


@pytest.mark.parametrize("request_id", [0, 7, -3, 2**53 - 1, "1", "abc-DEF_9:/. x", ""])
def test_ids_echoed_as_the_sdk_does(sdk: Any, request_id: Any) -> None:
    message = copy.deepcopy(BASE)
    message["id"] = request_id
    assert check(sdk, line_of(message))


def test_minimal_and_crlf_requests_answered(sdk: Any) -> None:
    message = copy.deepcopy(BASE)
    message["params"]["capabilities"] = {}
    message["params"]["clientInfo"] = {"name": "x", "version": "0"}
    assert check(sdk, line_of(message))
    assert check(sdk, line_of(message) + b"\r")
    compact = json.dumps(message, separators=(",", ":")).encode()
    assert check(sdk, b"  " + compact + b" \t")


HOSTILE_LINES = [
    b"",
    b" ",
    b"{",
    b"[" + line_of(BASE) + b"]",  # a batch
    b"\xef\xbb\xbf" + line_of(BASE),  # a BOM
    line_of(BASE).replace(b'"mcp"', b'"m\xffp"'),  # not UTF-8
    line_of(BASE).replace(b'"mcp"', b'"m\\ud800p"'),  # a lone surrogate escape
    line_of(BASE).replace(b'"mcp"', b'"m\\u00e9p"'),  # an escape that is fine
    line_of(BASE).replace(b'"mcp"', '"m\u00e9p"'.encode()),  # raw UTF-8
    line_of(BASE).replace(b'"mcp"', b'"m\x01p"'),  # a raw control character
    line_of(BASE).replace(b'"id": 0', b'"id": 0, "id": 1'),  # a duplicate key
    line_of(BASE).replace(b'"id": 0', b'"id": 1.0'),
    line_of(BASE).replace(b'"id": 0', b'"id": true'),
    line_of(BASE).replace(b'"id": 0', b'"id": NaN'),
    line_of(BASE).replace(b'"id": 0', b'"id": 123456789012345678901234567890'),
    line_of(BASE).replace(b'"id": 0', b'"id": "a\\"b"'),
    line_of(BASE).replace(b'"id": 0', b'"id": "a\\nb"'),
    line_of(BASE).replace(b"2.5", b"1e400"),
    line_of(BASE).replace(b"2.5", b"Infinity"),
    line_of(BASE).replace(b"2.5", b"[" * 300 + b"]" * 300),  # deep nesting
    line_of(BASE).replace(b'"mcp"', b'"m\rp"'),
    line_of(BASE).replace(b", ", b",\r "),  # a lone CR: two lines for the SDK
    line_of(BASE).replace(b'"2.0"', b'"1.0"'),
    line_of(BASE).replace(b'"initialize"', b'"ping"'),
    line_of(BASE).replace(b'"initialize"', b'"Initialize"'),
    json.dumps({**BASE, "id": None}).encode(),
    json.dumps({k: v for k, v in BASE.items() if k != "id"}).encode(),  # a notification
    json.dumps({k: v for k, v in BASE.items() if k != "params"}).encode(),
    json.dumps({**BASE, "params": {**BASE["params"], "_meta": {"progressToken": 1}}}).encode(),
    json.dumps(
        {
            **BASE,
            "params": {
                **BASE["params"],
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
            },
        }
    ).encode(),
]


@pytest.mark.parametrize("line", HOSTILE_LINES)
def test_hostile_first_lines(sdk: Any, line: bytes) -> None:
    check(sdk, line)


def _variants(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """(path, replacement) for every place in `value`: each odd value, a removal, an extra key."""
    out: list[tuple[tuple[Any, ...], Any]] = [(path, odd) for odd in ODD_VALUES]
    if isinstance(value, dict):
        out.append((path, {**value, "extra": 1}))
        for key, inner in value.items():
            out.append((path, {k: v for k, v in value.items() if k != key}))
            out.extend(_variants(inner, (*path, key)))
    return out


def _replaced(base: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = dict(base)
    out[path[0]] = _replaced(base[path[0]], path[1:], new)
    return out


def test_every_mutation_of_a_real_request(sdk: Any) -> None:
    answered = declined = 0
    for path, new in _variants(BASE):
        line = line_of(_replaced(BASE, path, new))
        if check(sdk, line):
            answered += 1
        else:
            declined += 1
    # Both sides are exercised: some variants are plain requests, most are not.
    assert answered > 20 and declined > 100, (answered, declined)


def _early_on_pipes() -> tuple[handshake.Early, int, int]:
    (wire_in, client_out), (client_in, wire_out) = os.pipe(), os.pipe()
    return handshake.Early(wire_in, wire_out), client_out, client_in


def test_a_line_split_across_reads_then_replayed_whole_to_the_sdk() -> None:
    early, client_out, client_in = _early_on_pipes()
    line = line_of(BASE) + b"\n"
    os.write(client_out, line[:40])
    reader = threading.Thread(target=early.read_first_line)
    reader.start()
    os.write(client_out, line[40:] + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    reader.join()
    assert early.answered is not None
    assert os.read(client_in, 65536) == early.answered[1]
    os.write(client_out, b"tail\n")
    os.close(client_out)
    stdin = early.sdk_stdin()
    # Everything the early reader took, then the wire, then its end: the SDK reads it all.
    assert stdin.read() == (line + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\ntail\n').decode()


def test_eof_before_a_line_is_replayed_to_the_sdk() -> None:
    early, client_out, _ = _early_on_pipes()
    os.write(client_out, b'{"jsonrpc":')
    os.close(client_out)
    early.read_first_line()
    assert early.eof and early.answered is None
    assert early.sdk_stdin().read() == '{"jsonrpc":'


def test_the_sdks_first_answer_to_that_id_is_dropped_and_nothing_else() -> None:
    early, client_out, client_in = _early_on_pipes()
    os.write(client_out, line_of(BASE) + b"\n")
    early.read_first_line()
    assert early.answered is not None
    sent = os.read(client_in, 65536)
    out = early.sdk_stdout()
    ping = '{"jsonrpc":"2.0","id":0,"method":"ping"}\n'  # a request with that id: not an answer
    out.write(ping)
    out.write(sent.decode())  # the SDK's own answer: dropped
    out.write(sent.decode())  # a second one (a second initialize with the same id): kept
    assert os.read(client_in, 65536) == ping.encode() + sent


def test_the_switch_interval_comes_back_after_the_answer() -> None:
    before = sys.getswitchinterval()
    early, client_out, client_in = _early_on_pipes()
    os.write(client_out, line_of(BASE) + b"\n")
    sys.setswitchinterval(0.0005)  # as start() lowers it for the reader
    try:
        early.read_first_line(before)
        assert sys.getswitchinterval() == before
    finally:
        sys.setswitchinterval(before)
