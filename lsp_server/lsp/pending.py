"""UNVERIFIED edits: the editor said it applied them but has not shown every file yet.

eglot sends the didChange of an applied edit from an idle timer (never while a synchronous
request waits), Neovim debounces it, and a skipped edit looks the same until the buffer reports.
Such an edit's history entry stays pending (begun, not finished) and is settled here when the
editor shows its files (a didChange or didOpen): the new text everywhere is "applied", the old
text everywhere NOT_APPLIED, anything else PARTIAL naming what changed otherwise. A grace timer
settles from what is seen then, so no entry stays pending for ever. Finishing the entry sends
`agentEdit/historyChanged` (the history's listener).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsp_server.actions.paths import Resolved
from lsp_server.engine import errors
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.history import History
from lsp_server.engine.text import Snapshot
from lsp_server.engine.undo import rollback_records
from lsp_server.lsp.apply import Location, Mark, report_mark
from lsp_server.lsp.documents import DocumentStore


@dataclass
class Pending:
    where: dict[str, Resolved]
    # Per unconfirmed plan path: its real path and where the editor's reports stood at the result.
    marks: dict[str, tuple[str, Mark]]


class PendingEdits:
    def __init__(
        self,
        store: DocumentStore,
        history: Callable[[], History],
        snapshot: Callable[[Resolved], Snapshot],
        warn: Callable[[str], None],
    ) -> None:
        self._store = store
        self._history = history  # the server's current one (it is replaced at initialize)
        self._snapshot = snapshot
        self._warn = warn
        self._by_id: dict[int, Pending] = {}

    def __bool__(self) -> bool:
        return bool(self._by_id)

    def hold(
        self,
        edit_id: int,
        where: dict[str, Resolved],
        locations: dict[str, Location],
        unconfirmed: list[str],
        grace_s: float,
        late_answer: asyncio.Future[Any] | None = None,
        refusal_settles: bool = True,
    ) -> None:
        """Keep edit `edit_id` pending. `late_answer`: the editor's applyEdit answer, still to
        come after a TIMEOUT; a refusal (or error) settles the edit from what is seen then if
        `refusal_settles` (a refusal by this client means nothing changed, or it reports before
        answering), an "applied" waits for the files to show it, as an UNVERIFIED edit does."""
        marks = {
            p: (locations[p].abs_path, report_mark(locations[p].abs_path, self._store))
            for p in unconfirmed
        }
        self._by_id[edit_id] = Pending(dict(where), marks)
        asyncio.get_running_loop().call_later(grace_s, self.settle, edit_id)
        if late_answer is not None and refusal_settles:
            late_answer.add_done_callback(lambda f: self._answered(edit_id, f))

    def _answered(self, edit_id: int, answer: asyncio.Future[Any]) -> None:
        applied = (
            not answer.cancelled()
            and answer.exception() is None
            and bool(getattr(answer.result(), "applied", False))
        )
        if not applied:
            # The editor refused it after all: what the files show now is the outcome.
            self.settle(edit_id)

    def refuse_if_held(self, abs_paths: dict[str, str]) -> None:
        """STALE if a file of `abs_paths` (plan path: real path) has a pending edit the editor
        has not shown yet: until it does, the server's view of that file may be older than the
        buffer (eglot applies an edit and reports it later), and an edit planned on that view
        would land on shifted lines. Undo of the pending edit is refused the same way."""
        for edit_id, p in self._by_id.items():
            held = {abs_path for abs_path, _mark in p.marks.values()}
            for path, abs_path in abs_paths.items():
                if abs_path in held:
                    raise errors.stale(
                        f"Edit #{edit_id} of {path} is still unverified: the editor said it "
                        "applied it but has not shown the file since, so what the server sees "
                        "of it may be older than the buffer. Nothing was sent or changed.",
                        "Wait for agentEdit/historyChanged for that edit (or check "
                        f"agentEdit.history {{editId: {edit_id}}}), then read the file again "
                        "and send the edit; typing in the file or saving it also shows it.",
                        path=path,
                        reason="PENDING_EDIT",
                        pendingEditId=edit_id,
                    )

    def settle(self, final_id: int | None = None) -> None:
        """Finish pending edits whose files the editor has now shown (all of them, or one that
        shows neither old nor new text); `final_id` is settled from what is seen now."""
        for edit_id, p in list(self._by_id.items()):
            final = edit_id == final_id
            # Shown since: a didChange or didOpen (a didClose shows nothing; unsaved typing
            # is gone from the disk then, and only the grace timer settles from that).
            fresh = [
                path
                for path, (abs_path, mark) in p.marks.items()
                if (now := report_mark(abs_path, self._store)) is not None and now != mark
            ]
            if not final and not fresh:
                continue
            observed = {path: s for path, r in p.where.items() if (s := self._live(r))}
            try:
                entry = self._history().entry(edit_id)
            except EditError:
                self._by_id.pop(edit_id, None)
                continue
            committed, _ = rollback_records(entry.changes, observed)
            states = {c["path"]: c["state"] for c in committed}
            if not final and len(fresh) < len(p.marks):
                if not any(states.get(path) == "unknown" for path in fresh):
                    continue  # wait for the other files (or the grace timer)
            del self._by_id[edit_id]
            self._finish(edit_id, entry.paths, p.where, committed)

    def _live(self, where: Resolved) -> Snapshot | None:
        try:
            return self._snapshot(where)
        except EditError:
            return None

    def _finish(
        self,
        edit_id: int,
        paths: list[str],
        where: dict[str, Resolved],
        committed: list[dict[str, Any]],
    ) -> None:
        history = self._history()
        kinds = {c["state"] for c in committed}
        if kinds == {"applied"}:
            versions: dict[str, int | None] = {}
            for path in paths:
                doc = self._store.by_path(where[path].abs_path) if path in where else None
                versions[path] = doc.version if doc is not None else None
            history.finish(edit_id, "applied", versions=versions)
            return
        if kinds <= {"not-applied"}:
            error = errors.not_applied(
                f"Edit #{edit_id} (unverified) did not land: the editor shows the old text.",
                "Read the files again and redo the edit if it is still wanted.",
                files=committed,
                editId=edit_id,
                committed=committed,
            )
            history.finish(edit_id, str(Code.NOT_APPLIED), error=error, committed=committed)
            return
        landed = [c["path"] for c in committed if c["state"] == "applied"]
        otherwise = [c["path"] for c in committed if c["state"] == "unknown"]
        error = errors.partial(
            f"Edit #{edit_id} (unverified) settled: landed {', '.join(landed) or 'nowhere'}"
            + (f"; changed otherwise: {', '.join(otherwise)}" if otherwise else "")
            + ".",
            f"Inspect it with agentEdit.history {{editId: {edit_id}}}; undo it with "
            f"agentEdit.undo {{editId: {edit_id}}} (CONFLICT shows the lines where the text has "
            "moved on), or fix the files by hand after reading them.",
            files=committed,
            editId=edit_id,
            committed=committed,
        )
        history.finish(edit_id, str(Code.PARTIAL), error=error, committed=committed)
        self._warn(f"agent-edit: {error.message} {error.hint}")
