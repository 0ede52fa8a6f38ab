"""The language server's `Context` for the actions (actions/context.py): open buffers first,
the editor's applier (lsp/editor_applier.py), the workspace history and edit lock of the server,
and the session of one caller (the editor's own agents, or another client given its own)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, TypeVar

from lsp_server.actions.links import LinkRule
from lsp_server.actions.paths import Resolved
from lsp_server.actions.session import Session
from lsp_server.engine import errors
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.history import History
from lsp_server.engine.model import Plan
from lsp_server.engine.policy import PathPolicy
from lsp_server.engine.text import Snapshot
from lsp_server.lsp.editor_applier import EditorApplier
from lsp_server.lsp.settings import Settings

if TYPE_CHECKING:
    from lsp_server.lsp.server import AgentEditServer

T = TypeVar("T")

_LONE_CR = re.compile(r"\r(?!\n)")


class EditorContext:
    """`actions.context.Context` over the server: open buffers, the editor's apply-and-verify
    (lsp/editor_applier.py), the workspace history and edit lock, and one caller's session."""

    def __init__(
        self, server: AgentEditServer, session: Session, within: str | None = None
    ) -> None:
        self.server = server
        self.session = session
        # A caller's own root (`agent-edit mcp --root`, lsp_server/mcp/boundary.py): a path
        # outside it is refused as that root's disk front refuses it, also the paths an action
        # finds itself (an undo's, from the history), which no check of the call's arguments sees.
        self.within = None if within is None else PathPolicy.from_settings([within])
        self.applier = EditorApplier(server)
        # Which names the patch being planned reached through a symbolic link: a Delete or a
        # Move's source acts on the link itself, as headless (actions/links.py).
        self.links = LinkRule()

    @property
    def history(self) -> History:
        return self.server.history  # replaced at initialize: read it each time

    @property
    def settings(self) -> Settings:
        return self.server.settings

    @property
    def edit_lock(self) -> asyncio.Lock:
        return self.server.edit_lock

    @property
    def max_file_bytes(self) -> int:
        return self.server.paths.policy.max_file_bytes

    def resolve(self, path: str, argument: str = "path") -> Resolved:
        policy = self.server.paths.policy
        r = policy.resolve(path, argument=argument)
        if self.within is not None:
            try:
                self.within.resolve(r.abs_path, argument=argument)
            except EditError as err:
                if err.code == Code.OUTSIDE_WORKSPACE:
                    raise
        name = policy.name_of(r)
        self.links.note(r, name, several_roots=len(policy.roots) > 1)
        return Resolved(name, r.abs_path)

    def snapshot(self, where: Resolved) -> Snapshot:
        return self._lines_agree(self.server.snapshot(where))

    def open_id(self, where: Resolved) -> int | None:
        doc = self.server.store.by_path(where.abs_path)
        return doc.open_id if doc is not None else None

    def read(self, where: Resolved) -> Snapshot:
        doc = self.server.store.by_path(where.abs_path)
        if doc is not None:
            doc.sha256  # noqa: B018 - hashed by the document, which keeps marks for later edits
        return self._lines_agree(self.server.snapshot(where))

    def _lines_agree(self, snap: Snapshot) -> Snapshot:
        """`snap`, unless it is a buffer of an editor that counts lines otherwise than LSP.

        LSP ends a line at a CR alone too; eglot only at LF, so from a CR not followed by LF on,
        its line numbers and the server's differ: an edit landed on the wrong line (as PARTIAL)
        and the didChange of the user's typing there was spliced in at the wrong line, so what
        the server reads of that buffer is no longer what it shows. Refused, with the line.
        """
        if snap.source != "buffer" or not self.server.lone_cr_in_line or not snap.has_cr:
            return snap
        at = _LONE_CR.search(snap.text)
        if at is None:
            return snap
        line = snap.text.count("\n", 0, at.start()) + 1
        raise errors.unsupported(
            f"{snap.path} has a carriage return not followed by a line feed (line {line} as the "
            "editor counts): this editor does not end a line there while LSP does, so positions "
            "in the file mean different lines to it and to the server, and an edit or a read "
            "through it could be wrong.",
            "Remove the lone carriage return (or convert the file's line endings), save, and "
            "reopen the file in the editor (Emacs: M-x revert-buffer), since the server's copy "
            "of the buffer may differ from it already; then read the file again.",
            path=snap.path,
            line=line,
        )

    def plan_patch(self, patch: str, snapshot: Callable[[str], Snapshot]) -> Plan:
        return self.links.plan(patch, snapshot)

    def live(self, path: str) -> Snapshot | None:
        return self.server.live(path)

    async def steps(self, gen: Generator[None, None, T]) -> T:
        from lsp_server.lsp.server import in_slices  # the server's slicing (and its SLICE_S)

        return await in_slices(gen)
