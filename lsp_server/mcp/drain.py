"""Every request answered before the MCP server ends: the end of stdin held back until then.

A client may send its requests and close stdin at once (a script piping one batch, a harness
closing its side after the last call). On EOF the SDK's dispatcher cancels the handlers still
running, so a tools/call in flight got no answer, even after its edit had landed: the client
never learnt that the file changed. `Drain` sits between the SDK and its stdio streams: it
notes each request read (but `initialize`, which handshake.py may answer itself) and each answer
written, and gives the SDK the end of stdin only once every request read has its answer, or
the client cancelled it (`notifications/cancelled`, which gets none), or DRAIN_LIMIT_S passed
(a handler that never ends must not keep the process alive for ever).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from lsp_server.mcp.router import ANSWER_TIMEOUT_S
from lsp_server.mcp.streams import Receiving, Sending

# How long the end of stdin is held back for answers still due: past the router's wait for the
# editor's answer (120 s, or AGENT_EDIT_MCP_TIMEOUT_S), so a call through the editor ends with
# its own TIMEOUT result ("the edit may still land") rather than the SDK's bare "Connection
# closed" (a fixed 60 s cut it off first). The disk path's waits (the peers' 5 s) are shorter.
DRAIN_LIMIT_S = ANSWER_TIMEOUT_S + 60.0


class Drain:
    """One MCP connection's requests still unanswered; `reader` and `writer` wrap its streams."""

    def __init__(self) -> None:
        import anyio

        # Keys as the SDK's dispatcher correlates them (`coerce_request_id`: "7" and 7 are one
        # id); a count, not a set, so a duplicate id stays due until its every answer is written.
        self._due: Counter[Any] = Counter()
        self._answered = anyio.Event()  # set whenever `_due` becomes empty

    def reader(self, inner: Any) -> DrainedReader:
        return DrainedReader(inner, self)

    def writer(self, inner: Any) -> DrainedWriter:
        return DrainedWriter(inner, self)

    def read(self, item: Any) -> None:
        message = getattr(item, "message", None)
        method = getattr(message, "method", None)
        if method is None:
            return
        ident = getattr(message, "id", None)
        if ident is not None and method != "initialize":
            self._due[_key(ident)] += 1
        elif method == "notifications/cancelled":
            # Read as the SDK reads it (`cancelled_request_id_from_params`): "1" cancels request
            # 1 there, so it must settle it here; `true` or 1.0 cancels nothing there, so it must
            # settle nothing here (a set's `discard(True)` dropped request 1, and EOF came early).
            from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params

            params = getattr(message, "params", None)
            ident = cancelled_request_id_from_params(params if isinstance(params, dict) else None)
            if ident is not None:
                self._settle(ident)

    def wrote(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if getattr(message, "method", None) is None:  # an answer (result or error)
            self._settle(getattr(message, "id", None))

    def _settle(self, ident: Any) -> None:
        key = _key(ident)
        if self._due[key] > 1:
            self._due[key] -= 1
        else:
            self._due.pop(key, None)
        if not self._due:
            self._answered.set()

    async def all_answered(self) -> None:
        import anyio

        with anyio.move_on_after(DRAIN_LIMIT_S):
            while self._due:
                self._answered = anyio.Event()
                await self._answered.wait()


def _key(ident: Any) -> Any:
    from mcp.shared.dispatcher import coerce_request_id

    return coerce_request_id(ident)


class DrainedReader(Receiving):
    """The SDK's read stream: EOF passed on only once every request read is answered."""

    def __init__(self, inner: Any, drain: Drain) -> None:
        super().__init__(inner)
        self._drain = drain

    async def receive(self) -> Any:
        import anyio

        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            await self._drain.all_answered()
            raise
        self._drain.read(item)
        return item


class DrainedWriter(Sending):
    """The SDK's write stream: each answer written is noted."""

    def __init__(self, inner: Any, drain: Drain) -> None:
        super().__init__(inner)
        self._drain = drain

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        self._drain.wrote(item)
