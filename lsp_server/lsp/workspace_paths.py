"""Resolving the paths agents send into workspace files: relative, absolute or file:// URIs.

Symlinks are followed and `..` collapsed before the containment check, so a path cannot leave the
workspace folders by spelling.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pygls.uris import to_fs_path

from lsp_server.engine.policy import PathPolicy


@dataclass(frozen=True)
class Resolved:
    rel: str  # workspace-relative, `/`-separated: the name results use
    abs_path: str  # real absolute path


def real_path_of_uri(uri: str) -> str | None:
    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return os.path.realpath(path) if path else None


class WorkspacePaths:
    """The server's path gate: `lsp_server.engine.policy.PathPolicy` under the names used here."""

    def __init__(self, policy: PathPolicy) -> None:
        self.policy = policy
        # Where the history journal lives; with no workspace folder, the server's directory
        # (the policy itself then refuses every path).
        self.roots = [r.real for r in policy.roots] or [os.path.realpath(os.getcwd())]

    def resolve(self, path: str, argument: str = "path") -> Resolved:
        r = self.policy.resolve(path, argument=argument)
        return Resolved(self.policy.name_of(r), r.abs_path)
