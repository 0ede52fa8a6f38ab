"""Requests the SDK's stdin reader drops, answered with a JSON-RPC error instead of none.

Two kinds of request line reach the SDK only as a parse failure, which it drops with no reply,
so the client waits for ever (a `ping` too):
- nested deeper than its JSON parser reads (about 200 levels), any method but `tools/call`
  (which mcp/deep.py hands on to be refused as INVALID_ARGUMENT by name);
- an id or a method holding a lone UTF-16 surrogate (JSON's `"\\ud800"`; mcp/surrogates.py): the
  SDK echoes those in its answer, which its writer cannot encode in UTF-8 (the server would end).
`answer` makes the error answer (-32600 Invalid Request, the id as the client sent it) for such
a line, None for any other; the line is never run. It is JSON written with every non-ASCII
character escaped, so a lone surrogate in the id is sent back as the escape it came as (a
client that could send it can read it), and handed to the SDK's own stdout writer (`Line`), so
it is written between the SDK's answers, never through one.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_types import INVALID_REQUEST

NESTED = (
    "Invalid Request: nested deeper than the MCP server's JSON reader takes (about 200 "
    "levels); it was not read or run. Send params as the method's schema gives them."
)
SURROGATE = (
    "Invalid Request: its {where} holds a lone UTF-16 surrogate, which the MCP server cannot "
    "write back in UTF-8; it was not run. Send ids and method names as plain text."
)


class Line:
    """An answer already written as JSON, for the SDK's stdout writer: it writes whatever a
    message's `model_dump_json` gives (mcp/server/stdio.py), here the line as it is."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.message = self
        self.metadata = None

    def model_dump_json(self, **_: Any) -> str:
        return self.text


def answer(exc: Exception) -> Line | None:
    """The error answer to the request line the SDK refused with `exc`, if it is one of those
    the module docstring names; else None (the line stays dropped, as the SDK drops it)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors()
    if len(errors) != 1 or errors[0].get("type") != "json_invalid":
        return None
    line = errors[0].get("input")
    if not isinstance(line, str):
        return None
    try:
        if "recursion limit" in str(errors[0].get("msg")):
            return _nested(line)
        return _unechoable(line)
    except (KeyError, ValueError, RecursionError):
        return None


def _nested(line: str) -> Line | None:

    method, ident = _top(line)
    if method == "tools/call" and _encodes(ident):
        return None  # deep.py's: refused by name as the tool's result
    return _error(ident, NESTED)


def _unechoable(line: str) -> Line | None:
    if "\\u" not in line:
        return None
    method, ident = _top(line)
    if _encodes(method) and _encodes(ident):
        return None  # surrogates.py's: the surrogate is elsewhere, refused by the tool
    where = "id" if not _encodes(ident) else "method"
    return _error(ident, SURROGATE.format(where=where))


def _top(line: str) -> tuple[str, Any]:
    """The method and id of a request line, read at its top level only (nothing nested is
    parsed: no recursion); KeyError or ValueError if it is not a request."""
    from lsp_server.mcp.deep import _members

    top = _members(line)
    method = json.loads(top["method"])
    if not isinstance(method, str):
        raise ValueError("no method")
    return method, json.loads(top["id"])


def _error(ident: Any, text: str) -> Line | None:
    if isinstance(ident, bool) or not isinstance(ident, str | int):
        return None  # a notification (no id: no answer), or an id JSON-RPC does not allow
    body = {"jsonrpc": "2.0", "id": ident, "error": {"code": INVALID_REQUEST, "message": text}}
    return Line(json.dumps(body, separators=(",", ":")))  # ensure_ascii: every escape kept


def _encodes(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True
