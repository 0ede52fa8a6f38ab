"""Reading JSON-RPC messages from the client, answering the malformed ones instead of dropping them.

pygls 2.1.1's loop (`pygls.io_.run_async`) logs a body it cannot parse and answers nothing, so a
client that sent a bad request waits forever; and after a body shorter than its Content-Length it
only finds the next header by luck. This loop answers as JSON-RPC says: -32700 for a body that is
not JSON (invalid UTF-8, truncated, nested too deep, a number Python will not convert), -32600 for
JSON that is not a request, the handler's own error for params that do not fit, and always goes on
serving: a header is recognised wherever it starts in a line, so framing recovers after a bad body.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol

if TYPE_CHECKING:
    from pygls.io_ import AsyncReader

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# A header line, also when the bytes of a truncated body run into it.
_CONTENT_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d{1,15})[ \t]*\r?\n?$", re.IGNORECASE)
# The biggest body read: whole-file writes of the largest editable file, JSON-escaped, fit.
MAX_BODY_BYTES = 512 * 1024 * 1024


def reply_error(protocol: JsonRPCProtocol, msg_id: Any, code: int, message: str) -> None:
    """A JSON-RPC error response (`id` null when the request's id could not be read)."""
    protocol._send_data(  # noqa: SLF001 - pygls's one way to write a framed message
        {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
    )


def _id_of(data: Any) -> Any:
    if isinstance(data, dict):
        msg_id = data.get("id")
        if isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool):
            return msg_id
    return None


def handle_body(protocol: JsonRPCProtocol, body: bytes) -> None:
    """Parse one message body and hand it to the protocol, or answer why it cannot be."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        reply_error(protocol, None, PARSE_ERROR, f"Parse error: invalid UTF-8 at byte {exc.start}")
        return
    try:
        data = json.loads(text)
    except RecursionError:
        reply_error(protocol, None, PARSE_ERROR, "Parse error: the JSON is nested too deeply")
        return
    except ValueError as exc:  # JSONDecodeError, and ints over Python's digit limit
        reply_error(protocol, None, PARSE_ERROR, f"Parse error: {str(exc)[:200]}")
        return
    msg_id = _id_of(data)
    if not isinstance(data, dict) or data.get("jsonrpc") != JsonRPCProtocol.VERSION:
        reply_error(
            protocol,
            msg_id,
            INVALID_REQUEST,
            'Invalid Request: expected one JSON object with "jsonrpc": "2.0"',
        )
        return
    is_request = "method" in data and "id" in data
    if "method" in data and not isinstance(data["method"], str):
        if is_request:
            reply_error(protocol, msg_id, INVALID_REQUEST, "Invalid Request: method is no string")
        return
    try:
        message = protocol.structure_message(data)
    except JsonRpcException as exc:
        if is_request:
            reply_error(protocol, msg_id, exc.code, exc.message)
        return
    except Exception:  # noqa: BLE001 - a message pygls cannot take must not stop the loop
        log.exception("could not structure a message")
        if is_request:
            reply_error(protocol, msg_id, INVALID_REQUEST, "Invalid Request")
        return
    if is_request and msg_id is None:
        reply_error(protocol, None, INVALID_REQUEST, "Invalid Request: id is no number or string")
        return
    try:
        protocol.handle_message(message)
    except Exception:  # noqa: BLE001 - as pygls: a failing handler must not stop the loop
        log.exception("Unable to handle message")


async def run_async(
    stop_event: threading.Event, reader: AsyncReader, protocol: JsonRPCProtocol
) -> None:
    """pygls's message loop (`pygls.io_.run_async`), answering what it cannot parse."""
    content_length = 0
    while not stop_event.is_set():
        header = await reader.readline()
        if not header:
            break
        match = _CONTENT_LENGTH.search(header)
        if match:
            content_length = int(match.group(1))
            continue
        if header.strip() or not content_length:
            continue  # another header (Content-Type), or stray bytes between messages
        length, content_length = content_length, 0
        if length > MAX_BODY_BYTES:
            # Not waited for: a length no body will fill (a bogus 10**15) would swallow every
            # later message. The bytes that follow are scanned for the next header instead, as
            # after a bad body (an oversized body is one long line, ended by that header).
            reply_error(
                protocol,
                None,
                INVALID_REQUEST,
                f"Invalid Request: Content-Length {length} is over the {MAX_BODY_BYTES} limit",
            )
            continue
        body = await reader.readexactly(length)
        if not body:
            break
        handle_body(protocol, body)
