"""Resolving the paths agents send into workspace files: relative, absolute or file:// URIs.

Symlinks are followed and `..` collapsed before the containment check (engine/policy.py), so a
path cannot leave the workspace folders by spelling. Every front resolves through this one gate.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from lsp_server.engine.policy import PathPolicy


@dataclass(frozen=True)
class Resolved:
    """A path the policy let through: the name results use, and the real file."""

    rel: str  # workspace-relative, `/`-separated: the name results use
    abs_path: str  # real absolute path


class WorkspacePaths:
    """The path gate: `lsp_server.engine.policy.PathPolicy` under the names the actions use."""

    def __init__(self, policy: PathPolicy) -> None:
        self.policy = policy
        # Where the history journal lives; with no workspace folder, the process's directory
        # (the policy itself then refuses every path).
        self.roots = [r.real for r in policy.roots] or [os.path.realpath(os.getcwd())]

    def resolve(self, path: str, argument: str = "path") -> Resolved:
        r = self.policy.resolve(path, argument=argument)
        return Resolved(self.policy.name_of(r), r.abs_path)
