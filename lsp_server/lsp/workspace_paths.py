"""The editor's file:// URIs as real paths (pygls's URI rules); the gate is actions/paths.py."""

from __future__ import annotations

import os

from pygls.uris import to_fs_path


def real_path_of_uri(uri: str) -> str | None:
    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return os.path.realpath(path) if path else None
