"""Resolving the paths agents send into workspace files: relative, absolute or file:// URIs.

Symlinks are followed and `..` collapsed before the containment check, so a path cannot leave the
workspace folders by spelling.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pygls.uris import to_fs_path

from lsp_server.engine.errors import Code, EditError


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
    def __init__(self, roots: list[str]) -> None:
        self.roots = [os.path.realpath(r) for r in roots] or [os.path.realpath(os.getcwd())]

    def resolve(self, path: str) -> Resolved:
        if "\0" in path or not path.strip():
            raise EditError(
                Code.INVALID_ARGUMENT,
                "The path is empty or contains a NUL byte.",
                "Give a workspace-relative path such as src/app.py.",
                {"argument": "path"},
            )
        if path.startswith("file:"):
            fs = real_path_of_uri(path)
            if fs is None:
                raise EditError(
                    Code.INVALID_ARGUMENT,
                    f"Cannot read the URI {path!r}.",
                    "Give a file:// URI or a workspace-relative path.",
                    {"argument": "path"},
                )
            candidate = fs
        elif "://" in path:
            raise EditError(
                Code.OUTSIDE_WORKSPACE,
                f"{path!r} is not a file in the workspace (only file paths and file:// URIs are).",
                "Edit files inside the workspace folders only.",
                {"path": path, "rule": "workspace-only"},
            )
        elif os.path.isabs(path):
            candidate = path
        else:
            candidate = os.path.join(self.roots[0], path)
        real = os.path.realpath(candidate)
        for root in self.roots:
            if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
                rel = os.path.relpath(real, root).replace(os.sep, "/")
                if len(self.roots) > 1 and root != self.roots[0]:
                    rel = real.replace(os.sep, "/")
                return Resolved(rel, real)
        raise EditError(
            Code.OUTSIDE_WORKSPACE,
            f"{path} resolves to {real}, outside the workspace folders.",
            "Edit files inside the workspace folders only.",
            {"path": path, "resolved": real, "rule": "workspace-only"},
        )
