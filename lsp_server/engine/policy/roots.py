"""Workspace folders: each as the client named it and as it really is on disk, whether it lives
on a case-insensitive file system, and a path relative to it.

Containment compares case-insensitively only for roots detected to live on a case-insensitive file
system.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from lsp_server.engine.policy.names import parts
from lsp_server.engine.policy.settings import SettingsError
from lsp_server.engine.policy.uris import SCHEME, decode_file_uri


@dataclass(frozen=True)
class Root:
    """A workspace folder: as the client named it and as it really is on disk."""

    named: str
    real: str
    case_insensitive: bool = False

    @property
    def casefold_real(self) -> str:
        return self.real.casefold()

    @staticmethod
    def of(path_or_uri: str) -> Root:
        path = root_path(path_or_uri)
        real = os.path.realpath(path)
        return Root(named=path, real=real, case_insensitive=detect_case_insensitive(real))


def root_path(path_or_uri: str) -> str:
    p = decode_file_uri(path_or_uri) if SCHEME.match(path_or_uri) else path_or_uri
    p = os.path.expanduser(p) if p == "~" or p.startswith("~/") else p
    if not os.path.isabs(p):
        raise SettingsError("roots", f"workspace folder {p!r} is not an absolute path")
    return os.path.normpath(p)


def detect_case_insensitive(real_root: str) -> bool:
    alt = real_root.swapcase()
    if alt == real_root:
        return False
    try:
        return os.path.samestat(os.stat(real_root), os.stat(alt))
    except (OSError, ValueError):
        return False


def rel_to(path: str, root: str, case_insensitive: bool) -> str | None:
    """`path` relative to `root` ('' for the root itself), or None when it is not inside."""
    if not case_insensitive and "//" not in path and not path.endswith("/"):
        # The common case without splitting: no empty components, so a plain prefix is the
        # same test as comparing components (anything else takes the general way below).
        r = root.rstrip("/")
        if "//" not in r:
            if path.startswith(r + "/"):
                return path[len(r) + 1 :]
            if path == r and r:
                return ""
    pp, rp = parts(path), parts(root)
    if len(pp) < len(rp):
        return None
    head = pp[: len(rp)]
    if case_insensitive:
        if [x.casefold() for x in head] != [x.casefold() for x in rp]:
            return None
    elif head != rp:
        return None
    return "/".join(pp[len(rp) :])
