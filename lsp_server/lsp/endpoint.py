"""The language server's local endpoint: other processes (`agent-edit mcp`, the CLI, another
language server on the same workspace) reach the editor's buffers through it.

At `initialize` the server listens on a Unix socket in the runtime folder (a 127.0.0.1 port when
the socket path would be too long), then announces itself (lsp_server/discovery.py). Each
connection sends one JSON object per line, `{token, session, action, args}`, and gets the result
object back, one line. A wrong or missing token is refused. Actions run in the server's event loop
exactly as `workspace/executeCommand` runs them: serialized with the editor's own edits (the same
edit lock), each distinct `session` with its own reads. Nothing here writes to stdout (the LSP
stream).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hmac
import json
import logging
import os
import secrets
import socket
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from lsp_server import discovery
from lsp_server.actions.session import Session
from lsp_server.engine.results import refusal, wire

if TYPE_CHECKING:
    from lsp_server.lsp.server import AgentEditServer

log = logging.getLogger(__name__)

MAX_SESSIONS = 64
# The hint of a malformed endpoint request: only agent-edit's own fronts speak this protocol
# (lsp_server/discovery.py writes their requests), so one is their bug, not the agent's.
PROTOCOL_HINT = (
    "Only agent-edit mcp and the agent-edit CLI call this endpoint (through "
    "lsp_server.discovery); a malformed request from them is a bug: report it with this message."
)
UNIX_PATH_MAX = 100  # sun_path is 108 bytes on Linux, 104 on macOS


async def run_action(
    server: AgentEditServer,
    session: Session | None,
    action: str,
    args: Any,
    within: str | None = None,
) -> dict[str, Any]:
    """Run one action for `session` exactly as `workspace/executeCommand` would (the actions
    layer over the server's context); malformed arguments are a refusal the agent can read.
    `within`: the caller's root (`agent-edit mcp --root`), outside which no path is taken."""
    from lsp_server import actions
    from lsp_server.actions.args import refusal_of

    if action not in actions.NAMES:
        return refusal(
            "INVALID_ARGUMENT",
            f"Unknown action {action!r}.",
            f"Use one of: {', '.join(actions.NAMES)}.",
            argument="action",
        )
    try:
        return wire(await actions.run(server.context(session, within), action, args))
    except actions.InvalidArguments as exc:
        return refusal_of(exc)


class Endpoint:
    """The server's listening socket and announcement; `start` at initialize, `stop` at exit."""

    def __init__(self, server: AgentEditServer) -> None:
        self.server = server
        self.token = secrets.token_hex(32)
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self.announced: tuple[str, str] | None = None
        self.owner = os.getpid()
        self.sock: socket.socket | None = None
        self.unix_path: str | None = None
        self._serving: asyncio.AbstractServer | None = None
        self._announcement: tuple[dict[str, Any], str, int | None, str] = ({}, "", None, "")

    def start(self, folders: list[str], editor: str, editor_pid: int | None) -> None:
        """Listen and announce (synchronously: once `initialize` is answered, the server can be
        found). No trusted runtime folder (neither it nor its fallback, discovery.py) leaves the
        server unannounced: it still serves its editor, and the log says why."""
        if not folders:
            return
        try:
            name = f"{discovery.PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
            # Checked (ours, 0700, not a link) before anything is bound inside it; the fallback
            # when the runtime folder is another user's (lookers look there too).
            folder = discovery.announce_dir()
            sock_path = os.path.join(folder, name + ".sock")
            endpoint: dict[str, Any]
            if len(sock_path.encode()) <= UNIX_PATH_MAX and hasattr(socket, "AF_UNIX"):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                old = os.umask(0o177)  # the socket itself 0600
                try:
                    sock.bind(sock_path)
                finally:
                    os.umask(old)
                self.unix_path = sock_path
                endpoint = {"unix": name + ".sock"}
            else:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.bind(("127.0.0.1", 0))
                endpoint = {"host": "127.0.0.1", "port": sock.getsockname()[1]}
            sock.listen(64)
            sock.setblocking(False)
            self.sock = sock
            loop = asyncio.get_running_loop()
            task = loop.create_task(self._serve(sock))
            task.add_done_callback(_log_failure)
            self.announced = discovery.announce(
                folders,
                endpoint,
                self.token,
                editor,
                editor_pid,
                name=name + ".json",
                folder=folder,
            )
            self._announcement = (endpoint, editor, editor_pid, folders[0])
            atexit.register(self.stop)
        except (OSError, discovery.DiscoveryError) as exc:
            log.warning("agent-edit: not announced for other processes (MCP, CLI): %s", exc)
            self.stop()

    def update(self, folders: list[str]) -> None:
        """The workspace folders changed: say so in the announcement (same file, replaced)."""
        if self.announced is None or not folders:
            return
        endpoint, editor, editor_pid, history_root = self._announcement
        try:
            discovery.announce(
                folders,
                endpoint,
                self.token,
                editor,
                editor_pid,
                self.announced[1],
                history_root=history_root,
                folder=self.announced[0],
            )
        except (OSError, discovery.DiscoveryError) as exc:
            log.warning("agent-edit: the announcement could not be updated: %s", exc)

    async def _serve(self, sock: socket.socket) -> None:
        if sock.family == socket.AF_INET:
            self._serving = await asyncio.start_server(
                self._connection, sock=sock, limit=discovery.MAX_LINE
            )
        else:
            self._serving = await asyncio.start_unix_server(
                self._connection, sock=sock, limit=discovery.MAX_LINE
            )

    def stop(self) -> None:
        if self.owner != os.getpid():
            return  # a forked child (it leaves by os._exit, but never take the parent's file)
        if self.announced is not None:
            discovery.remove(*self.announced)
            self.announced = None
        if self._serving is not None:
            self._serving.close()
            self._serving = None
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
            self.sock = None

    def session(self, key: str) -> Session:
        s = self.sessions.get(key)
        if s is None:
            s = self.sessions[key] = Session()
            while len(self.sessions) > MAX_SESSIONS:
                self.sessions.popitem(last=False)
        else:
            self.sessions.move_to_end(key)
        return s

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    answer = refusal("INVALID_ARGUMENT", "The request is too large.", PROTOCOL_HINT)
                    writer.write(json.dumps(answer).encode() + b"\n")
                    break
                if not line:
                    break
                try:
                    answer, keep = await self._answer(line)
                except Exception as exc:  # noqa: BLE001 - a caller gets a reason, never silence
                    log.exception("agent-edit endpoint: a request failed")
                    answer, keep = (
                        refusal(
                            "IO_ERROR",
                            f"The editor's agent-edit server failed on this request "
                            f"({type(exc).__name__}: {exc}); what changed, if anything, is in "
                            "its history.",
                            "Check the files with read and history before trying again.",
                        ),
                        False,
                    )
                # ASCII JSON: any text (a lone surrogate echoed back included) encodes.
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
                if not keep:
                    break
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _answer(self, line: bytes) -> tuple[dict[str, Any], bool]:
        try:
            msg = json.loads(line)
        except ValueError:
            return refusal("INVALID_ARGUMENT", "The request is not JSON.", PROTOCOL_HINT), False
        if not isinstance(msg, dict):
            return refusal(
                "INVALID_ARGUMENT", "The request is not a JSON object.", PROTOCOL_HINT
            ), False
        token = msg.get("token")
        # surrogatepass: a JSON-escaped lone surrogate is a wrong token, not a failure.
        if not isinstance(token, str) or not hmac.compare_digest(
            token.encode("utf-8", "surrogatepass"), self.token.encode()
        ):
            return (
                refusal(
                    "DENIED",
                    "Wrong or missing token: this endpoint serves only callers that read its "
                    "announcement.",
                    "Find the server through lsp_server.discovery, which reads the token.",
                    rule="token",
                ),
                False,
            )
        action = msg.get("action")
        args = msg.get("args", {})
        key = msg.get("session")
        if action == "holds":
            return self._holds(args), True
        if action == "hello":
            return {"ok": True, "pid": os.getpid(), "folders": self.server.paths.roots}, True
        if not isinstance(key, str) or not key or len(key) > 200:
            return (
                refusal(
                    "INVALID_ARGUMENT",
                    "session must be a non-empty string of at most 200 characters.",
                    PROTOCOL_HINT,
                    argument="session",
                ),
                True,
            )
        if not isinstance(action, str):
            return refusal(
                "INVALID_ARGUMENT", "action must be a string.", PROTOCOL_HINT, argument="action"
            ), True
        within = msg.get("within")
        if within is not None and not (isinstance(within, str) and os.path.isabs(within)):
            return refusal(
                "INVALID_ARGUMENT",
                "within must be an absolute path.",
                PROTOCOL_HINT,
                argument="within",
            ), True
        answer = await run_action(self.server, self.session(key), action, args, within)
        if msg.get("withOpen"):
            # The files the editor has open now: a caller that loses this server later knows
            # which files' disk copies may be behind a buffer (lsp_server/mcp/router.py).
            answer["_open"] = [doc.path for doc in self.server.store]
        return answer, True

    def _holds(self, args: Any) -> dict[str, Any]:
        """Which of `args.paths` (absolute, real) the editor has open here."""
        paths = args.get("paths") if isinstance(args, dict) else None
        if not isinstance(paths, list):
            return refusal(
                "INVALID_ARGUMENT", "paths must be a list.", PROTOCOL_HINT, argument="paths"
            )
        held = [p for p in paths if isinstance(p, str) and self.server.store.by_path(p)]
        return {"ok": True, "held": held}


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("agent-edit endpoint stopped: %s", task.exception())
