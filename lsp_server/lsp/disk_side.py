"""The part of a plan the server carries out on disk itself instead of through the editor.

Every file the editor does not have open (an update, an add, a delete, a move whose source and
destination are both not open) is changed by the disk writer (`engine.files`), never by a
null-version `workspace/applyEdit`: the editor would apply such an edit to whatever the disk
holds at that moment (shifted lines, an overwritten line) and open a tab left dirty. The disk
writer re-checks each file's identity right before its rename, so a file that changed since the
plan read it is STALE and nothing lands. The editor sees the change through its file watcher.

Open buffers go to the editor in one versioned applyEdit. A resource operation on an open
buffer that the editor cannot do (its `workspace.workspaceEdit.resourceOperations` does not list
it; eglot lists none) is refused up front (UNSUPPORTED): the buffer would be left showing a file
that is gone or moved.

A mixed edit keeps this order: the disk side is prepared (checked, new contents written to
temporary files, journaled) under the workspace lock, the editor's part is applied and
verified, then the disk side is committed; a failed commit has the editor's part rolled back
(server.py). A file opened in the editor meanwhile stops the commit (`check_still_closed`): the
disk is never written under an open buffer.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from typing import Any

from lsp_server.engine import errors, files, recovery
from lsp_server.engine.errors import EditError
from lsp_server.engine.model import FileChange, Plan
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


def _open_paths(c: FileChange, where: dict[str, Location], store: DocumentStore) -> list[str]:
    return sorted(p for p in {c.path, c.target_path} if store.by_path(where[p].abs_path))


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
        open_paths = _open_paths(c, where, store)
        if not open_paths:
            disk.append(c)
            continue
        if c.before.link is not None:
            # A link removed or moved as the link (actions/links.py) is the disk's to do: the
            # editor keys buffers by real path, so a rename from the link's URI would move the
            # link as if it were the file; and the disk writer must not write under the buffer.
            # (The planner refuses a move onto an open buffer first; this holds whatever led
            # here.)
            raise errors.unsupported(
                f"{', '.join(open_paths)} is open in the editor, and this edit would replace "
                f"it with the symbolic link {c.path} moved or removed as a link, which only the "
                "disk can do, not under an open buffer. Nothing was sent or changed.",
                f"Ask the user to close {', '.join(open_paths)}, or move the file the link "
                "points to by its own name.",
                paths=open_paths,
                link=c.path,
                reason="LINK_ONTO_BUFFER",
            )
        need = NEEDS.get(c.change)
        if need is None or need in ops:
            editor.append(c)
            continue
        verb = {"create": "create", "delete": "delete", "rename": "rename (move)"}[need]
        raise errors.unsupported(
            f"The editor cannot {verb} files (its workspaceEdit.resourceOperations does not "
            f"list {need!r}), and {', '.join(open_paths)} is open in it, so the server cannot "
            "do it on disk either without leaving a buffer on a file that is gone. Nothing was "
            "sent or changed.",
            f"Ask the user to close {', '.join(open_paths)}, then send the edit again; "
            "or change the file's content with Update File instead.",
            paths=open_paths,
            operation=need,
            reason="OPEN_BUFFER",
        )
    return editor, disk


def check_still_closed(
    changes: list[FileChange], where: dict[str, Location], store: DocumentStore
) -> None:
    """STALE if a disk-side file was opened in the editor since the edit was split: writing the
    disk under an open buffer would leave the buffer showing the old text."""
    opened = sorted({p for c in changes for p in _open_paths(c, where, store)})
    if opened:
        raise errors.stale(
            f"{', '.join(opened)} was opened in the editor while the edit was being applied, "
            "so it was not written on disk under the open buffer; nothing was changed.",
            "Send the edit again: it now goes to the editor's buffer.",
            paths=opened,
            reason="OPENED_IN_EDITOR",
        )


def in_one_folder(changes: list[FileChange], roots: list[str]) -> tuple[str, list[FileChange]]:
    """The workspace folder holding every disk-side file, and the changes as the writer takes
    them: paths relative to that folder (it works below one folder, through its descriptors).

    Paths of the first folder are relative already and are kept as they are (never re-derived
    from a resolved path: the writer itself refuses a symlink on the way). A file of another
    folder has an absolute path, made relative by its folder's prefix. A disk side spread over
    several folders is refused (UNSUPPORTED): one journal, one lock, one folder per apply.
    """
    homes: set[str] = set()
    out: list[FileChange] = []

    def rel(path: str) -> str:
        if not os.path.isabs(path):
            homes.add(roots[0])
            return path
        for root in sorted(roots, key=len, reverse=True):
            if path.startswith(root.rstrip(os.sep) + os.sep):
                homes.add(root)
                return path[len(root.rstrip(os.sep)) + 1 :]
        homes.add(path)  # no folder: refused below
        return path

    for c in changes:
        src, dst = rel(c.path), rel(c.moved_to) if c.moved_to else None
        if src == c.path and dst == c.moved_to:
            out.append(c)
        else:
            out.append(replace(c, before=replace(c.before, path=src), moved_to=dst))
    if len(homes) != 1 or not set(homes) <= set(roots):
        raise errors.unsupported(
            "The files of this edit that are not open in the editor lie in several workspace "
            "folders; the server changes files on disk one folder at a time, all or nothing. "
            "Nothing was sent or changed.",
            "Send one edit per workspace folder.",
            paths=sorted({p for c in changes for p in (c.path, c.target_path)}),
        )
    return homes.pop(), out


class DiskSide:
    """The disk part of one edit, prepared (`files.prepare_plan`) under the workspace lock,
    which is held until `commit()` or `abort()`: a CLI or another server on this workspace
    waits for it rather than writing the same files in between."""

    def __init__(self, root: str, changes: list[FileChange], action: str) -> None:
        related: list[dict[str, Any]] = []  # rolled back under a nested workspace folder
        self._lock = files.workspace_lock(root, related=related)
        sdir = self._lock.__enter__()
        try:
            # An apply a CLI was killed in the middle of is rolled back before this one plans
            # on the files (the check below then sees what the rollback restored). One that
            # cannot be rolled back raises (IO_ERROR): its journal must not be overwritten.
            self.recovered = recovery.Recovery(related + files.recover_locked(root, sdir))
            try:
                self._prepared = files.prepare_plan(root, sdir, Plan(action, tuple(changes)))
            except BaseException:
                # One the writer did not turn into its result (an OSError, a UnicodeError...):
                # what it left (temporary files, its journal) is rolled back now, under the
                # lock, not by the next apply.
                files.recover_locked(root, sdir)
                raise
        except BaseException:
            self._lock.__exit__(None, None, None)
            raise
        self._held = True
        self._root, self._sdir = root, sdir

    def commit(self) -> None:
        """Put every file in place, or raise `EditError` (STALE, ...) after rolling back."""
        try:
            self._prepared.commit()
        except EditError:
            raise  # the writer's own result: rolled back, or PARTIAL saying what
        except BaseException:
            # One the writer did not turn into its result: a file it already renamed into place
            # is put back now, under the lock still held, not by the next apply.
            files.recover_locked(self._root, self._sdir)
            raise
        finally:
            self._release()

    def abort(self) -> dict[str, Any]:
        """Remove the temporary files and journal; nothing the user sees was changed."""
        try:
            return self._prepared.abort()
        finally:
            self._release()

    def _release(self) -> None:
        if self._held:
            self._held = False
            self._lock.__exit__(None, None, None)


async def prepare(root: str, changes: list[FileChange], action: str) -> DiskSide:
    """A `DiskSide`, made in a worker thread: the workspace lock may be held by a CLI apply or
    another server waiting for its editor, and writing and syncing the temporaries waits on the
    disk; neither may freeze the event loop. If the request is cancelled meanwhile, the thread
    still finishes: what it prepared is then aborted, so the lock is never left held."""
    made = asyncio.ensure_future(asyncio.to_thread(DiskSide, root, changes, action))
    try:
        return await asyncio.shield(made)
    except asyncio.CancelledError:
        made.add_done_callback(_abort_orphan)
        raise


def _abort_orphan(made: asyncio.Future[DiskSide]) -> None:
    if made.cancelled() or made.exception() is not None:
        return  # nothing was prepared (or it already released the lock itself)
    made.result().abort()
