"""`agent-edit mcp` answers the client's `initialize` before the MCP SDK has loaded.

Importing the SDK (`mcp`, `mcp_types`: pydantic models) takes ~0.7 s, over ten times `agent-edit
--help`; issue 16's bar is 1.5x. So the process first takes the stdio wire itself (`start`: fd 0
and 1 are moved to private descriptors; fd 0 then reads the null device and fd 1 writes to
stderr, as the SDK's own stdio transport does, so nothing but JSON-RPC reaches stdout), and a
thread reads the first line while the main thread imports the SDK. When that line is a plain
`initialize` request (`answer`: a conservative check that accepts only what the SDK accepts),
the thread writes the answer the SDK would write, byte for byte. The SDK is then given the same
wire through its public transport, `stdio_server(stdin, stdout)`: its stdin replays every byte
the thread read (the initialize request, whatever followed it, an EOF) and then reads the wire;
its stdout drops the SDK's own answer to that initialize (its first reply to that id, identical;
a different one is logged as a bug). So the SDK's session state comes from its own handling of
the request, and anything that is not a plain initialize (another request first, a batch, a
notification, a malformed, huge or non-UTF-8 line, EOF) reaches the SDK exactly as it came,
answered only by it.

A/B (2 shared cores, load 6; main's tree and this one exported side by side, rounds alternating,
`bench_mcp.bench_startup`, median of 4 rounds of 5; `python bench/bench_mcp.py` prints the same):
    spawn to the initialize answer   main 1882 ms (8.4x --help's 224 ms)   here 162 ms (0.80x)
The SDK's load is unchanged: spawn to the answer of a `tools/list` sent right after, in this
tree, median of 8 alternating: with this reader 2531 ms, the SDK alone 2528 ms (the bare SDK
import 2470 ms). Tool calls cost the same (bench_calls A/B: read 4.49 -> 4.35 ms).

Test hook: AGENT_EDIT_MCP_SDK_GATE=FIFO makes the SDK wait to load until a byte is written to
that FIFO, so a test can prove an answer came from here (tests/mcp/test_handshake_wire.py).
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from typing import IO, Any, cast

from lsp_server import __version__

NAME = "agent-edit"
INSTRUCTIONS = (
    "agent-edit edits files safely. Read a file (read) before editing it. Use replace for a "
    "local change, apply_patch for several changes or files at once, write for a new file or a "
    "full rewrite. Edits are checked against the text the user sees (the editor's unsaved "
    "buffers when an editor runs agent-edit): a STALE refusal means the file changed since you "
    "read it: read it again. Every refusal says why and what to do; nothing is changed by a "
    "refused edit. history lists the edits, undo reverts one."
)
# What the SDK's low-level server with a tools/list and a tools/call handler declares.
CAPABILITIES: dict[str, Any] = {"tools": {"listChanged": False}}
# The SDK's HANDSHAKE_PROTOCOL_VERSIONS (mcp_types.version) and what it counter-offers for any
# other version (LATEST_HANDSHAKE_VERSION); tests/mcp/test_handshake_answer.py holds them equal.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
# Said on stderr when the client closed its end before an answer (the server goes on to the end
# of stdin; the call's answer is lost, what it did is not).
GONE = (
    "agent-edit mcp: the client closed the connection before an answer; what the call did, if "
    "anything, is in the history (agent-edit history)."
)
# A first line longer than this is left to the SDK (an initialize request is a few hundred bytes).
FIRST_LINE_LIMIT = 64 * 1024
SDK_GATE_ENV = "AGENT_EDIT_MCP_SDK_GATE"

_MAX_DEPTH = 16
_INIT_FIELDS = {"protocolVersion", "capabilities", "clientInfo"}


def _plain_id(text: str) -> bool:
    """A string id json.dumps writes exactly as the SDK's serializer does: printable ASCII
    without quote and backslash (nothing either escapes)."""
    return len(text) <= 256 and all(" " <= c <= "~" and c not in '"\\' for c in text)


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN, Infinity: Python's json reads them, the SDK's parser does not


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("duplicate key")  # which one wins is the parsers' business, not ours
    return out


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether `value` is JSON both parsers read the same way: no lone surrogate, no huge or
    non-finite number, shallow (the SDK's parser has a nesting limit)."""
    if depth > _MAX_DEPTH:
        return False
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    if isinstance(value, float):
        return value == value and abs(value) != float("inf")
    if isinstance(value, str):
        return value.isascii() or _encodable(value)
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _object_of(value: Any, fields: tuple[str, ...]) -> bool:
    """A JSON object with only `fields`, each an object (whose content the SDK takes as is)."""
    return isinstance(value, dict) and all(
        k in fields and isinstance(v, dict) for k, v in value.items()
    )


def _capabilities(caps: Any) -> bool:
    """The client capabilities real clients send, in the shapes the SDK's models take; anything
    else (tasks, extensions, a null, a capability we do not know) is left to the SDK."""
    if not isinstance(caps, dict):
        return False
    for name, value in caps.items():
        if name == "roots":
            ok = isinstance(value, dict) and all(
                k == "listChanged" and isinstance(v, bool) for k, v in value.items()
            )
        elif name == "sampling":
            ok = _object_of(value, ("context", "tools"))
        elif name == "elicitation":
            ok = _object_of(value, ("form", "url"))
        elif name == "experimental":
            ok = isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
        else:
            ok = False
        if not ok:
            return False
    return True


def _client_info(info: Any) -> bool:
    return (
        isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
        and all(k in ("name", "version", "title") and isinstance(v, str) for k, v in info.items())
    )


def reply(request_id: int | str, requested: str) -> bytes:
    """The SDK's answer line to an accepted initialize request (its key order and spacing)."""
    result = {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE,
        "serverInfo": {"name": NAME, "version": __version__},
    }
    message = {"jsonrpc": "2.0", "id": request_id, "result": result}
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def answer(line: bytes) -> tuple[int | str, bytes] | None:
    """(the request id, the exact bytes the SDK writes in reply) when `line` (the first line on
    the wire, without its newline) is a plain initialize request; None when in any doubt."""
    if line.endswith(b"\r"):
        line = line[:-1]  # "\r\n": the SDK's text layer reads one line
    if b"\r" in line:
        return None  # a lone CR ends a line for the SDK's text layer: two lines, not one
    try:
        message = json.loads(
            line.decode("utf-8"), parse_constant=_no_constant, object_pairs_hook=_no_duplicates
        )
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    if not isinstance(message, dict) or set(message) != {"jsonrpc", "id", "method", "params"}:
        return None
    request_id, params = message["id"], message["params"]
    if message["jsonrpc"] != "2.0" or message["method"] != "initialize":
        return None
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None
    if isinstance(request_id, int) and not -(2**53) < request_id < 2**53:
        return None
    if isinstance(request_id, str) and not _plain_id(request_id):
        return None
    if not isinstance(params, dict) or set(params) != _INIT_FIELDS:
        return None
    requested = params["protocolVersion"]
    if not isinstance(requested, str) or not _plain(params):
        return None
    if not _capabilities(params["capabilities"]) or not _client_info(params["clientInfo"]):
        return None
    return request_id, reply(request_id, requested)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Early:
    """The wire, taken from fd 0/1: the early reader's state and the SDK's two streams."""

    def __init__(self, wire_in: int, wire_out: int) -> None:
        self.wire_in, self.wire_out = wire_in, wire_out
        self.consumed = bytearray()  # every byte the early reader took off the wire, for the SDK
        self.eof = False  # the early reader saw the wire's end (replayed once, after `consumed`)
        self.answered: tuple[int | str, bytes] | None = None
        self.done = threading.Event()

    def read_first_line(self, interval: float | None = None) -> None:
        """The early reader (its own thread): the first line, answered when it is a plain
        initialize. Reading stops at the first newline, EOF or FIRST_LINE_LIMIT bytes. The
        GIL switch interval goes back to `interval` once done (start lowers it)."""
        try:
            while b"\n" not in self.consumed and len(self.consumed) < FIRST_LINE_LIMIT:
                chunk = os.read(self.wire_in, FIRST_LINE_LIMIT)
                if not chunk:
                    self.eof = True
                    return
                self.consumed += chunk
            end = self.consumed.find(b"\n")
            if end < 0:
                return
            got = answer(bytes(self.consumed[:end]))
            if got is not None:
                _write_all(self.wire_out, got[1])
                self.answered = got
        except OSError:
            # The wire failed (a closed pipe): the SDK meets the same when it reads or writes,
            # and answers (or not) exactly as it would have.
            pass
        finally:
            if interval is not None:
                sys.setswitchinterval(interval)
            self.done.set()

    def sdk_stdin(self) -> io.TextIOWrapper:
        """The SDK's stdin, the text layer its stdio transport puts on fd 0, except that a
        byte that is not UTF-8 becomes a lone surrogate (U+DC80-U+DCFF), not U+FFFD: the SDK's
        "replace" wrote U+FFFD into a file for an agent's broken text, where the CLI refuses
        the same bytes. surrogates.Repaired hands such a line on, and the actions refuse it
        as INVALID_ARGUMENT naming the argument."""
        raw = io.BufferedReader(_Replay(self))
        return io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape")

    def sdk_stdout(self) -> IO[str]:
        """The SDK's stdout (it writes whole lines and flushes each)."""
        return cast("IO[str]", _Answered(self))


class _Replay(io.RawIOBase):
    """The wire's input as the SDK reads it: what the early reader took, then the wire."""

    def __init__(self, early: Early) -> None:
        self._early = early
        self._offset = 0
        self._eof_pending: bool | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        early = self._early
        early.done.wait()
        if self._eof_pending is None:
            self._eof_pending = early.eof
        left = len(early.consumed) - self._offset
        if left > 0:
            n = min(left, len(buffer))
            buffer[:n] = early.consumed[self._offset : self._offset + n]
            self._offset += n
            return n
        if self._eof_pending:
            self._eof_pending = False
            return 0  # the EOF the early reader saw, once (a terminal's ^D is not the end)
        try:
            data = os.read(early.wire_in, len(buffer))
        except BlockingIOError:
            return None  # a non-blocking wire: as FileIO does
        buffer[: len(data)] = data
        return len(data)


class _Answered:
    """The wire's output as the SDK writes it (one JSON-RPC message per write), without the
    SDK's own answer to the initialize request answered early."""

    def __init__(self, early: Early) -> None:
        from lsp_server.mcp import signals

        self._early = early
        self._pending = True
        self._gone = False  # the client closed its end: answers have nowhere to go
        self._signals = signals
        signals.reported()

    def write(self, text: str) -> int:
        data = text.encode("utf-8")  # strict, as the SDK's own text layer
        if self._pending and self._is_answer(text, data):
            return len(text)
        if not self._gone:
            try:
                _write_all(self._early.wire_out, data)
            except BrokenPipeError:
                # The client went away before this answer (it disconnected mid-call): the SDK's
                # writer task died on this, which ended the server with a traceback and exit
                # status 1 after the call had run. What the call did is in the history; the
                # server ends when stdin does, as for any client that leaves.
                self._gone = True
                import logging

                logging.getLogger(__name__).warning(GONE)
        self._signals.written(text)  # a signal held for this answer stops the server now
        return len(text)

    def _is_answer(self, text: str, data: bytes) -> bool:
        early = self._early
        early.done.wait()
        if early.answered is None:
            self._pending = False
            return False
        request_id, sent = early.answered
        try:
            message = json.loads(text)
        except ValueError:
            return False
        if not isinstance(message, dict) or "id" not in message or "method" in message:
            return False
        got = message["id"]
        if type(got) is not type(request_id) or got != request_id:
            return False
        self._pending = False
        if data != sent:
            import logging

            logging.getLogger(__name__).error(
                "agent-edit mcp: the early initialize answer differs from the SDK's (a bug: "
                "report it); sent %r, the SDK's %r",
                sent,
                data,
            )
        return True

    def flush(self) -> None:
        pass


def start() -> Early | None:
    """Take the wire from fd 0/1 and start the early reader; None where the descriptors cannot
    be moved (then the SDK's transport takes fd 0/1 itself, as without this module)."""
    if sys.platform == "win32":
        return None
    import fcntl

    moved: list[int] = []
    try:
        for fd in (0, 1):
            moved.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3))
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        os.dup2(2, 1)
    except OSError:
        for fd, wire in zip((0, 1), moved, strict=False):
            try:
                os.dup2(wire, fd)  # back as it was (a no-op where it did not move)
            finally:
                os.close(wire)
        return None
    early = Early(moved[0], moved[1])
    # The importing main thread holds the GIL; let the reader in sooner than every 5 ms.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    reader = threading.Thread(
        target=early.read_first_line, args=(interval,), name="mcp-initialize", daemon=True
    )
    reader.start()
    return early


def _wait_for_gate() -> None:
    gate = os.environ.get(SDK_GATE_ENV)
    if gate:
        try:
            with open(gate, "rb") as fifo:
                fifo.read(1)
        except OSError as exc:  # a test hook: a wrong path must not stop the server
            sys.stderr.write(f"agent-edit mcp: {SDK_GATE_ENV} ignored ({exc})\n")


def main(root: str) -> int:
    early = start()
    _wait_for_gate()
    from lsp_server.mcp.server import main as serve

    return serve(root, early)
