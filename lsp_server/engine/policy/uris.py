"""File URIs and paths: `file://` URIs decoded strictly (another scheme or host, a query or
fragment, escapes that are not UTF-8, a relative path: refused, never guessed) and made the way
VS Code writes them; `canonical_path`, the physical path the document store keys buffers by.
"""

from __future__ import annotations

import os
import re

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.policy.names import DRIVE, refuse

# Compiled at import: every path and workspace folder given is tested against it.
SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")


def path_to_uri(path: str) -> str:
    """The `file://` URI of an absolute path (percent-encoded as VS Code does)."""
    from urllib.parse import quote

    p = path.replace("\\", "/") if os.name == "nt" else path
    if re.match(DRIVE, p):
        p = "/" + p[0].lower() + p[1:]
    return "file://" + quote(p, safe="/")


def uri_to_path(uri: str) -> str | None:
    """The decoded local path of a `file://` URI, or None for any other scheme or a malformed URI.

    For the document store: key open documents by `canonical_path(uri)` so a buffer is found
    whichever spelling (encoding, case of the drive letter, symlink) the client used.
    """
    try:
        return decode_file_uri(uri)
    except EditError:
        return None


def canonical_path(path_or_uri: str) -> str | None:
    """The physical path (symlinks resolved) of a file URI or absolute path, unchecked."""
    p = uri_to_path(path_or_uri) if SCHEME.match(path_or_uri) else path_or_uri
    if not p or "\0" in p or not os.path.isabs(p):
        return None
    try:
        return os.path.realpath(p)
    except (OSError, ValueError):
        return None


def decode_file_uri(uri: str, argument: str = "path") -> str:
    m = SCHEME.match(uri)
    if not m or m.group(1).lower() != "file":
        raise refuse(
            Code.OUTSIDE_WORKSPACE,
            "uri-scheme",
            uri,
            "names a non-file URI scheme; only files in the workspace folders can be edited",
            argument,
        )
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(uri)
    except ValueError:
        raise refuse(
            Code.INVALID_ARGUMENT, "bad-uri", uri, "is not a valid URI", argument
        ) from None
    if parts.netloc not in ("", "localhost"):
        raise refuse(
            Code.OUTSIDE_WORKSPACE,
            "uri-authority",
            uri,
            f"names a file on another host ({parts.netloc[:60]!r}), outside the workspace folders",
            argument,
        )
    if parts.query or parts.fragment or "#" in uri or "?" in uri:
        raise refuse(
            Code.INVALID_ARGUMENT,
            "bad-uri",
            uri,
            "has a query or fragment; a file URI must encode '?' and '#' in names as %3F and %23",
            argument,
        )
    try:
        path = unquote(parts.path, errors="strict")
    except UnicodeDecodeError:
        raise refuse(
            Code.INVALID_ARGUMENT,
            "bad-uri",
            uri,
            "has percent-escapes that are not UTF-8",
            argument,
        ) from None
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):
        path = path[1:]
    if not path.startswith("/") and not (os.name == "nt" and re.match(DRIVE, path)):
        raise refuse(
            Code.INVALID_ARGUMENT, "bad-uri", uri, "does not hold an absolute path", argument
        )
    return path
