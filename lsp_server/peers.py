"""Other agent-edit language servers on the same workspace (issue 14 item 5), for every front
(the language server, the CLI, `agent-edit mcp`'s disk side).

Before this server writes files on disk (files not open in its own editor), it asks every other
live server whose workspace overlaps its own whether its editor has one of them open. If one
does, the disk is not what that user sees (the buffer may hold unsaved text, and a later save
would overwrite the write), so the edit is refused, naming the editor that holds the file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from lsp_server import discovery
from lsp_server.engine import errors
from lsp_server.engine.errors import EditError

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from lsp_server.actions.context import Applier, Attempt
    from lsp_server.actions.paths import Resolved
    from lsp_server.engine.model import FileChange, Plan

log = logging.getLogger(__name__)

ASK_TIMEOUT_S = 5.0


def _paths(changes: list[FileChange], abs_path: Callable[[str], str | None]) -> dict[str, str]:
    """absolute path -> the change's path, for every file the changes write."""
    out: dict[str, str] = {}
    for c in changes:
        for p in (c.path, c.moved_to):
            if p and (a := abs_path(p)) is not None:
                out[a] = p
    return out


def _unreachable(entry: discovery.Entry, exc: Exception) -> EditError:
    return errors.open_elsewhere(
        f"Another agent-edit server for this workspace, started by {entry.describe()}, did not "
        f"answer whether it has these files open ({exc}); they may hold unsaved text there, so "
        "the disk was not written. Nothing was changed.",
        "Make the edit from that editor, or close it, then try again.",
        reason="PEER_UNREACHABLE",
        editor=entry.editor,
        pid=entry.editor_pid or entry.pid,
    )


def _held(entry: discovery.Entry, held: list[str]) -> EditError:
    return errors.open_elsewhere(
        f"{', '.join(held)} is open in {entry.describe()}, through another agent-edit server; "
        "its buffer, not the disk, is what the user sees there, so the disk was not written. "
        "Nothing was changed.",
        "Make the edit through that editor (agent-edit mcp and the CLI go through it when their "
        "root is its workspace folder), or close the file there first.",
        reason="OPEN_IN_OTHER_EDITOR",
        paths=held,
        editor=entry.editor,
        pid=entry.editor_pid or entry.pid,
    )


def untrusted(exc: discovery.DiscoveryError) -> EditError:
    """The refusal of a disk edit when no trusted runtime folder exists (discovery.py): an
    editor's server could not announce itself, so a buffer holding the file is unseen."""
    return errors.io_error(
        "agent-edit cannot tell whether an editor has these files open, so the disk was not "
        f"written ({exc}). Nothing was changed.",
        f"Set {discovery.ENV_DIR} (or XDG_RUNTIME_DIR) to a folder of your own with mode 700, "
        "for the editors' agent-edit servers and this command alike, or remove the folder "
        "another user made; reads work meanwhile.",
        reason="RUNTIME_DIR_UNTRUSTED",
    )


def others(roots: list[str], orphans: list[discovery.Entry] | None = None) -> list[discovery.Entry]:
    """Live servers (not this process) whose workspace overlaps one of `roots`; the refusal
    (EditError) when there is no trusted runtime folder to look in. `orphans` gets the
    overlapping orphans (discovery.py: a dead server whose editor runs)."""
    seen: list[discovery.Entry] | None = [] if orphans is not None else None
    try:
        live = discovery.servers(seen)
    except discovery.DiscoveryError as exc:
        raise untrusted(exc) from None
    if orphans is not None and seen:
        orphans += [o for o in seen if any(o.overlaps(r) for r in roots)]
    return [e for e in live if any(e.overlaps(r) for r in roots)]


async def refuse_if_held(
    changes: list[FileChange], abs_path: Callable[[str], str | None], roots: list[str]
) -> None:
    """CONFLICT if another live server's editor holds one of these files open (`abs_path`: a
    change's path to the real file), or may (an orphan's: `refuse_if_orphaned`)."""
    orphans: list[discovery.Entry] = []
    entries = others(roots, orphans)
    refuse_if_orphaned(orphans, changes, abs_path)
    if not entries:
        return
    paths = _paths(changes, abs_path)
    for entry in entries:
        try:
            answer = await discovery.arequest(
                entry, {"action": "holds", "args": {"paths": list(paths)}}, ASK_TIMEOUT_S
            )
        except (OSError, ValueError, TimeoutError) as exc:
            if not discovery.alive(entry):
                continue  # gone meanwhile: it holds nothing
            raise _unreachable(entry, exc) from None
        held = [paths[p] for p in answer.get("held") or [] if p in paths]
        if held:
            raise _held(entry, held)


def refuse_if_held_sync(
    entries: list[discovery.Entry],
    changes: list[FileChange],
    abs_path: Callable[[str], str | None],
) -> None:
    """`refuse_if_held` without an event loop (the CLI, the MCP front's disk side)."""
    paths = _paths(changes, abs_path)
    for entry in entries:
        try:
            answer = discovery.request(
                entry, {"action": "holds", "args": {"paths": list(paths)}}, ASK_TIMEOUT_S
            )
        except (OSError, ValueError) as exc:
            if not discovery.alive(entry):
                continue
            raise _unreachable(entry, exc) from None
        held = [paths[p] for p in answer.get("held") or [] if p in paths]
        if held:
            raise _held(entry, held)


def refuse_if_orphaned(
    orphans: list[discovery.Entry],
    changes: list[FileChange],
    abs_path: Callable[[str], str | None],
) -> None:
    """CONFLICT for the files of `changes` in an orphan's workspace folders (discovery.py: its
    editor runs, its server is dead and nobody asked it which files its editor has open)."""
    paths = _paths(changes, abs_path)
    for orphan in orphans:
        held = sorted({p for a, p in paths.items() if orphan.holds(a) is not None})
        if held:
            raise _orphaned(orphan, held)


def _orphaned(orphan: discovery.Entry, held: list[str]) -> EditError:
    return errors.open_elsewhere(
        f"{', '.join(held)} may be open in {orphan.describe()}, whose agent-edit server is "
        "gone: it stopped before anyone asked it which files that editor has open (maybe with "
        "unsaved text, which a save would write over a disk edit), so the disk was not "
        "written. Nothing was changed.",
        "Restart agent-edit in that editor (e.g. restart its language server) so edits go "
        "through it, or quit the editor; read works meanwhile, from the disk. If no such "
        f"editor runs any more (its pid reused), remove {orphan.folder}/{orphan.name}.",
        reason="EDITOR_SERVER_GONE",
        paths=held,
        editor=orphan.editor,
        pid=orphan.editor_pid or orphan.pid,
    )


Guard = Callable[["Plan", "dict[str, Resolved]"], None]


class GuardedApplier:
    """A headless context's applier whose plans pass `guard` first (it raises the EditError
    refusing one): the CLI and `agent-edit mcp` on disk check other editors this way."""

    def __init__(self, inner: Applier, guard: Guard) -> None:
        self.inner = inner
        self.guard = guard

    def start(self, plan: Plan, where: dict[str, Resolved]) -> Attempt:
        self.guard(plan, where)
        return self.inner.start(plan, where)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # the rest of the inner applier (its `discard`, ...)
