"""The part of a plan the server carries out on disk itself instead of through the editor.

Editors do create/rename/delete only if their `workspace.workspaceEdit.resourceOperations` lists
them (eglot lists none, and answers "Internal error"). Such an operation on a file the editor has
not open is done here on disk (`engine.files.apply_plan`, atomic); on an open buffer it is refused
up front (UNSUPPORTED): the buffer would be left showing a file that is gone or moved.

The order is the one the disk writer will keep: the disk side is checked before the editor is
asked, the editor's part is applied and verified, then the disk side is committed (and the
editor's part rolled back if that fails). When the writer takes over every file not open, `split`
sends those here too, and `commit` becomes its prepared commit.
"""

from __future__ import annotations

import os
from typing import Any

from lsp_server.engine import files
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import FileChange, Plan
from lsp_server.engine.text import decode_file, sha256_text
from lsp_server.lsp.apply import Location
from lsp_server.lsp.documents import DocumentStore

# The resource operation each kind of change needs from the editor.
NEEDS = {"add": "create", "delete": "delete", "move": "rename"}


def resource_operations(capabilities: Any) -> frozenset[str]:
    """What the client says it can do: a subset of create, rename, delete."""
    ws = getattr(capabilities, "workspace", None)
    we = getattr(ws, "workspace_edit", None)
    ops = getattr(we, "resource_operations", None) or ()
    return frozenset(str(getattr(o, "value", o)) for o in ops)


def split(
    changes: list[FileChange],
    where: dict[str, Location],
    store: DocumentStore,
    ops: frozenset[str],
) -> tuple[list[FileChange], list[FileChange]]:
    """(changes for the editor, changes for the disk); UNSUPPORTED if an open buffer would need an
    operation the editor cannot do."""
    editor: list[FileChange] = []
    disk: list[FileChange] = []
    for c in changes:
        need = NEEDS.get(c.change)
        if need is None or need in ops:
            editor.append(c)
            continue
        open_paths = [
            p for p in {c.path, c.target_path} if store.by_path(where[p].abs_path) is not None
        ]
        if open_paths:
            verb = {"create": "create", "delete": "delete", "rename": "rename (move)"}[need]
            raise EditError(
                Code.UNSUPPORTED,
                f"The editor cannot {verb} files (its workspaceEdit.resourceOperations does not "
                f"list {need!r}), and {', '.join(sorted(open_paths))} is open in it, so the "
                "server cannot do it on disk either without leaving a buffer on a file that is "
                "gone. Nothing was sent or changed.",
                f"Ask the user to close {', '.join(sorted(open_paths))}, then send the edit again; "
                "or change the file's content with Update File instead.",
                {"paths": sorted(open_paths), "operation": need, "reason": "OPEN_BUFFER"},
            )
        disk.append(c)
    return editor, disk


def check_unchanged(changes: list[FileChange], where: dict[str, Location]) -> None:
    """STALE unless every disk-side file is still as the plan saw it (absent ones still absent)."""
    for c in changes:
        targets = [(c.path, c.before.exists, c.before.sha256 if c.before.exists else None)]
        if c.change == "move":
            targets.append((c.target_path, False, None))
        for path, existed, sha in targets:
            full = where[path].abs_path
            if not existed:
                if os.path.lexists(full):
                    _stale(path, "it exists now")
                continue
            try:
                with open(full, "rb") as f:
                    data = f.read()
                now = decode_file(path, data, max_bytes=1 << 62)
            except FileNotFoundError:
                _stale(path, "it is gone")
            except (OSError, EditError) as exc:
                _stale(path, str(exc))
            if sha256_text(now.text) != sha or now.bom != c.before.bom:
                _stale(path, "its content changed")


def _stale(path: str, why: str) -> None:
    raise EditError(
        Code.STALE,
        f"{path} changed on disk since the edit was planned ({why}); nothing was written to it.",
        "Read the file again and recompute the edit from what it holds now.",
        {"path": path, "reason": "CHANGED_ON_DISK"},
    )


def commit(root: str, action: str, changes: list[FileChange], where: dict[str, Location]) -> None:
    """Carry out the disk side, all or nothing (the files journal rolls back a failed step)."""
    check_unchanged(changes, where)
    files.apply_plan(root, Plan(action, tuple(changes)))
