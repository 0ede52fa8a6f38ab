"""Lone UTF-16 surrogates on the MCP stdio stream, which the SDK cannot carry either way.

JSON can escape a lone surrogate (`"\\ud800"`; JavaScript's JSON.stringify writes one for a
model's broken emoji) but UTF-8 cannot hold it:
- in: the SDK's strict JSON parser drops such a line with no reply, so the tool call is never
  answered. `Repaired` parses it again with Python's json, which keeps the surrogate, so the
  actions refuse it as INVALID_ARGUMENT naming the argument and position (arguments.py).
  Not in an id or a method: the SDK echoes those in its answer, which its writer cannot
  write (the server would end); such a line is answered with a JSON-RPC error of our own
  instead (mcp/dropped.py), the surrogate written as its escape, and never run.
- in, a byte that is not UTF-8: handshake.py's stdin decodes it as a lone surrogate
  (U+DC80-U+DCFF), not as the SDK's U+FFFD (which was written into the file), and `Repaired`
  hands it on the same way, so it is refused, not written. In an id or a method it becomes
  U+FFFD, as the SDK read it (`_replaced`): that line is answered, as before.
- out: a result can hold one (the history records a refused request as it came; an editor's
  buffer may hold one), and the SDK's writer fails on it, which ends the MCP server.
  `encodable` writes each as its escape (`\\udcff`), as the CLI's JSON output does.
"""

from __future__ import annotations

import json
from typing import Any

from lsp_server.mcp.streams import Receiving


def encodable(value: Any) -> Any:
    """`value` (a JSON-like structure) with every lone surrogate in its strings written as its
    backslash escape; the same object when there is none (the common case costs one check per
    non-ASCII string)."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {encodable(k): encodable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [encodable(v) for v in value]
    return value


def _reparsed(exc: Exception) -> Any:
    """The message of a line the SDK's parser refused for invalid JSON, if Python's json reads
    it (a lone surrogate escape) and it is a JSON-RPC message; else None."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors()
    if len(errors) != 1:
        return None
    kind, line = errors[0].get("type"), errors[0].get("input")
    if not isinstance(line, str):
        return None
    # json_invalid: an escaped lone surrogate; string_unicode: a raw one, a byte of the line
    # that is not UTF-8 (handshake.py's stdin decodes those as U+DC80-U+DCFF).
    if not (kind == "json_invalid" and "\\u" in line) and kind != "string_unicode":
        return None
    try:
        parsed = json.loads(line)
        if _echoed(parsed):
            return _replaced(line) if kind == "string_unicode" else None
        message = jsonrpc_message_adapter.validate_python(parsed, by_name=False)
    except (ValueError, RecursionError, ValidationError):  # RecursionError: deep nesting
        return _replaced(line) if kind == "string_unicode" else None
    return SessionMessage(message)


def _replaced(line: str) -> Any:
    """A line with bytes that are not UTF-8 where they are echoed (its id, its method) or that
    Python's json cannot read: as the SDK's own stdin reads it, each such byte U+FFFD (its
    answer then reaches the client, as before); None if the SDK refuses that too."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    text = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(text, by_name=False))
    except (ValueError, ValidationError):
        return None


def _echoed(message: Any) -> bool:
    """Whether a lone surrogate of `message` is where the SDK echoes it: its id (in the answer)
    or its method (in METHOD_NOT_FOUND's data). Its writer fails on one, ending the server, so
    such a line is left dropped, as the SDK alone drops it. Elsewhere (a tool's arguments or
    name, the client's info) it is not echoed: the actions refuse it by name, and our results
    escape it (`encodable`)."""
    if not isinstance(message, dict):
        return False
    try:
        json.dumps([message.get("id"), message.get("method")], ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    return False


class Repaired(Receiving):
    """The SDK's stdio read stream, with lines refused only for a lone surrogate parsed again,
    and a tool call refused for its nesting handed on to be refused by name (mcp/deep.py).
    Given the SDK's write stream, a request line it would drop unanswered (nested too deep, a
    lone surrogate in its id or method) is answered there with a JSON-RPC error instead
    (mcp/dropped.py), and not handed on."""

    def __init__(self, inner: Any, write: Any = None) -> None:
        super().__init__(inner)
        self._write = write

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            from lsp_server.mcp.deep import too_deep

            message = _reparsed(item) or too_deep(item)
            if message is not None:
                return message
            if self._write is None:
                return item
            from lsp_server.mcp.dropped import answer

            error = answer(item)
            if error is None:
                return item
            await self._write.send(error)
