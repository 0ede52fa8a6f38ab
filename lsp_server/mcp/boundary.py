"""The workspace boundary of `agent-edit mcp --root`: the root is the workspace for every path
the tools take, whether an editor's server answers the call or the disk does (product.md 5).

An editor's workspace folder may hold the root (`--root` a subfolder of it), so the editor's
server would let `../top.py` through that the disk front refuses OUTSIDE_WORKSPACE: the boundary
would depend on whether an editor runs. `leaves_root` finds a call that names such a path; the
router has the disk front answer it, which refuses it, by the same policy and in the same words,
before anything is read or written.
"""

from __future__ import annotations

from typing import Any

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.policy import PathPolicy


def _named(action: str, args: dict[str, Any]) -> list[tuple[str, str]]:
    """(argument, path) for every path a call's arguments name."""
    out: list[tuple[str, str]] = []
    path = args.get("path")
    if isinstance(path, str) and path:
        out.append(("path", path))
    expect = args.get("expect")
    if isinstance(expect, dict):
        out += [("expect", k) for k in expect if isinstance(k, str) and k]
    patch = args.get("patch")
    if action == "applyPatch" and isinstance(patch, str):
        from lsp_server.engine.v4a import UpdateFile, parse_patch

        try:
            hunks = parse_patch(patch)
        except EditError:
            return out  # the editor refuses it as the disk would (PARSE_ERROR)
        for h in hunks:
            out.append(("path", h.path))
            if isinstance(h, UpdateFile) and h.move_to:
                out.append(("moveTo", h.move_to))
    return out


def leaves_root(root: str, action: str, args: Any) -> bool:
    """Whether the call names a path outside `root` (the disk front's OUTSIDE_WORKSPACE)."""
    if not isinstance(args, dict):
        return False
    named = _named(action, args)
    if not named:
        return False
    policy = PathPolicy.from_settings([root])
    for argument, path in named:
        try:
            policy.resolve(path, argument=argument)
        except EditError as err:
            if err.code == Code.OUTSIDE_WORKSPACE:
                return True
    return False
