"""A tool call nested deeper than the MCP SDK's JSON parser reads (about 200 levels).

The SDK's stdin reader refuses such a line ("recursion limit exceeded") and drops it with no
reply, so the client waits forever for the tool call's answer (Python's json fails the same way,
a little deeper). `too_deep` reads only the line's top level (its id and method) and the name in
its params, skipping nested values without recursion, and hands on the same call with the
arguments replaced by `MARKER`; the server answers it with an INVALID_ARGUMENT refusal
(`refusal`) instead of running the tool. Other requests that deep are answered with a
JSON-RPC error (mcp/dropped.py): a `ping` nested deep got no answer, and its client hung.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lsp_server.engine.results import refusal as _refusal

# A key no action takes (a client that sends it itself gets the same refusal, nothing more).
MARKER = "agent-edit:nestedTooDeep"
_DECODER = json.JSONDecoder()
_NEXT = re.compile(r'["\[\]{}]')
_WS = re.compile(r"[ \t\n\r]*")
_scanstring: Any = getattr(json.decoder, "scanstring")  # noqa: B009 - not in typeshed


def _ws(text: str, i: int) -> int:
    """The index past the JSON whitespace at `i`."""
    m = _WS.match(text, i)
    return m.end() if m is not None else i


def refusal(name: str) -> dict[str, Any]:
    return _refusal(
        "INVALID_ARGUMENT",
        f"The arguments of this {name} call are nested deeper than the MCP server's JSON "
        "reader takes (about 200 levels), so they were not read and nothing was changed.",
        "Send the arguments as the tool's schema gives them: strings, numbers and a flat "
        "`expect` object, nothing nested deeper.",
        argument="arguments",
        reason="NESTED_TOO_DEEP",
    )


def _skip(text: str, i: int) -> int:
    """The end of the JSON value starting at `i` (whitespace skipped before it), read without
    recursion; ValueError if there is none."""
    i = _ws(text, i)
    if i >= len(text):
        raise ValueError("no value")
    c = text[i]
    if c == '"':
        return int(_scanstring(text, i + 1)[1])
    if c not in "[{":
        return _DECODER.raw_decode(text, i)[1]  # a number, true, false, null
    depth = 0
    while True:
        m = _NEXT.search(text, i)
        if m is None:
            raise ValueError("unclosed")
        i = m.start()
        c = text[i]
        if c == '"':
            i = _scanstring(text, i + 1)[1]
            continue
        depth += 1 if c in "[{" else -1
        i += 1
        if depth == 0:
            return i


def _members(text: str, i: int = 0) -> dict[str, str]:
    """The raw text of each member of the JSON object at `i` (nested values not parsed)."""
    i = _ws(text, i)
    if text[i : i + 1] != "{":
        raise ValueError("not an object")
    out: dict[str, str] = {}
    i += 1
    while True:
        i = _ws(text, i)
        if text[i : i + 1] == "}" and not out:
            return out
        if text[i : i + 1] != '"':
            raise ValueError("no key")
        key, i = _scanstring(text, i + 1)
        i = _ws(text, i)
        if text[i : i + 1] != ":":
            raise ValueError("no colon")
        start = i + 1
        i = _skip(text, start)
        out[key] = text[start:i].strip()
        i = _ws(text, i)
        if text[i : i + 1] == "}":
            return out
        if text[i : i + 1] != ",":
            raise ValueError("no comma")
        i += 1


def too_deep(exc: Exception) -> Any:
    """The tool call of a line the SDK refused for its nesting, with `MARKER` for arguments;
    None for any other refusal or line."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors()
    if len(errors) != 1 or errors[0].get("type") != "json_invalid":
        return None
    line = errors[0].get("input")
    if not isinstance(line, str) or "recursion limit" not in str(errors[0].get("msg")):
        return None
    try:
        top = _members(line)
        if json.loads(top.get("method", "null")) != "tools/call":
            return None
        request_id = json.loads(top["id"])
        name = json.loads(_members(top["params"]).get("name", "null"))
        message = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": {MARKER: True}},
        }
        json.dumps([request_id, name], ensure_ascii=False).encode()  # no lone surrogate
        return SessionMessage(jsonrpc_message_adapter.validate_python(message, by_name=False))
    except (KeyError, ValueError, RecursionError, ValidationError):
        return None
