"""The language server's `Applier` (actions/context.py): open buffers through the editor's
apply-and-verify, files not open through the atomic disk writer, both for a mixed edit.

A mixed edit prepares the disk side first (temporary files, under the workspace lock), applies
and verifies the buffers, then commits the disk side, and rolls the buffers back if the commit
fails: all or nothing, as one history entry. An edit the editor has not shown yet (UNVERIFIED)
is held (lsp/pending.py) and settled when it does. After a verified edit: syntax diagnostics
(lsp/diagnostics.py) and saving (`agentEdit/saveDocuments`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lsp_server import peers
from lsp_server.actions.context import Applied
from lsp_server.actions.paths import Resolved
from lsp_server.engine import errors
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import FileChange, Plan
from lsp_server.engine.recovery import Recovery
from lsp_server.engine.results import ChangedOnSave, EditResult, changed_on_save
from lsp_server.engine.undo import plan_rollback, save_record
from lsp_server.lsp import disk_side
from lsp_server.lsp.apply import (
    Location,
    Outcome,
    Shown,
    apply_and_verify,
    file_state,
    refusal_applies_nothing,
    transactional,
    uri_of,
)
from lsp_server.lsp.diagnostics import publish_after_edit
from lsp_server.lsp.file_format import saved_text

if TYPE_CHECKING:
    from collections.abc import Callable

    from lsp_server.lsp.server import AgentEditServer

log = logging.getLogger(__name__)

PENDING_GRACE_MIN_S = 1.0


class EditorApplier:
    def __init__(self, server: AgentEditServer) -> None:
        self.server = server

    def start(self, plan: Plan, where: dict[str, Resolved]) -> EditorAttempt:
        return EditorAttempt(self.server, plan, where)


class EditorAttempt:
    """One plan through the editor (and the disk writer for what the editor cannot do)."""

    # The editor's buffers change before any disk flush: the history's begin record is fsynced.
    flushes_state = False
    # The diff is made from the lent line lists before anything awaits the editor (execute.py).
    runs_meanwhile = False

    def __init__(self, server: AgentEditServer, plan: Plan, where: dict[str, Resolved]) -> None:
        self.server = server
        self.plan = plan
        self.where = where
        self.locations = {p: server.location(r) for p, r in where.items()}
        for c in plan.changes:
            if c.before.link is not None:
                # A symbolic link removed (or moved) as the link (actions/links.py): its place is
                # the link's own path, which no buffer is (the store is keyed by real path), so
                # it goes to the disk side and a buffer of the file it points to stays as it is.
                link = (
                    c.path if os.path.isabs(c.path) else os.path.join(server.paths.roots[0], c.path)
                )
                self.locations[c.path] = Location(link, uri_of(link))
        # A file whose last edit is unverified may look older here than in the editor.
        server.pending.refuse_if_held({p: loc.abs_path for p, loc in self.locations.items()})
        # Resource operations the editor cannot do: on disk, or refused now for an open buffer.
        self.to_editor, self.to_disk = disk_side.split(
            list(plan.changes),
            self.locations,
            server.store,
            disk_side.resource_operations(server.client_capabilities),
        )
        self.disk: disk_side.DiskSide | None = None
        self.versions: dict[str, int | None] = {}
        # Target path -> the document state that first showed the edit (apply.py's latch).
        self.shown: dict[str, Shown | None] = {}

    def check_dry_run(self) -> None:
        pass  # the editor's part is checked by the editor; the disk side only when it applies

    async def prepare(self) -> Recovery | None:
        # Files not open: checked and written to temporary files now (STALE here changes
        # nothing); put in place only after the editor's part is verified.
        if not self.to_disk:
            return None
        # Another live agent-edit server whose editor has one of these files open: its buffer,
        # not the disk, is what the user sees there (issue 14 item 5).
        locations = self.locations
        await peers.refuse_if_held(
            self.to_disk,
            lambda p: locations[p].abs_path if p in locations else None,
            self.server.paths.roots,
        )
        self.disk = await disk_side.prepare(
            *disk_side.in_one_folder(self.to_disk, self.server.paths.roots), self.plan.action
        )
        return self.disk.recovered

    def abort(self) -> None:
        if self.disk is not None:
            self.disk.abort()  # a no-op once committed or aborted

    async def apply(self, edit_id: int, meanwhile: Callable[[], None] | None = None) -> Applied:
        if self.disk is not None:
            outcome = await self._apply_mixed(self.disk)
        else:
            outcome = await self._apply(self.plan, self.plan.action)
        self.shown = outcome.shown
        if outcome.error is None:
            return Applied()
        error = outcome.error
        if error.code == Code.UNVERIFIED or outcome.unconfirmed:
            self._hold(edit_id, outcome)
            return Applied(error, held=True)
        if error.code == Code.PARTIAL and not getattr(error, "rolled_back", False):
            error = await self._roll_back(self.plan, error, outcome.late_answer)
        return Applied(error)

    def _hold(self, edit_id: int, outcome: Outcome) -> None:
        """Not finished: settled when the editor shows the files (lsp/pending.py)."""
        server = self.server
        settings = server.settings
        # A late reporter still reports within a few idle timers (eglot: 0.5 s); an editor
        # that has not answered yet gets the time it may take to answer.
        grace = max(2 * settings.verify_timeout_ms / 1000, PENDING_GRACE_MIN_S)
        if outcome.late_answer is not None:
            grace = max(grace, settings.apply_timeout_ms / 1000)
        # eglot applies file by file and reports late: its refusal proves nothing yet.
        refusal_settles = not server.verifier.reports_late or transactional(
            server.client_capabilities, list(self.plan.changes)
        )
        server.pending.hold(
            edit_id,
            self.where,
            self.locations,
            outcome.unconfirmed,
            grace,
            outcome.late_answer,
            refusal_settles,
        )

    def landed(self, change: FileChange) -> tuple[int | None, int | None]:
        doc = self.server.store.by_path(self.locations[change.target_path].abs_path)
        if doc is None:
            return None, None
        # The state that showed the edit, not the one now: the user may have typed since (the
        # result's version and sha256 then name the edit's text, and the agent's next edit of
        # the file is checked against the typing, not waved through by version). Its open too:
        # after a close and reopen the versions count again, and a version of the old open
        # tied to the new one waved the agent's next edit through over the user's typing.
        shown = self.shown.get(change.target_path)
        if shown is None:
            # Shown while not open (on disk), or not latched: only a buffer that shows the
            # edit's text now is named by its version.
            if doc.text != change.new_text:
                self.versions[change.target_path] = None
                return None, None
            shown = Shown.of(doc)
            self.shown[change.target_path] = shown
        self.versions[change.target_path] = shown.version
        if shown.still(doc):
            # Only then is the edit's text the buffer's: seeding the caches with it after the
            # user typed made the server read (and hash, and edit) a buffer without the typing.
            # Not the version alone: a change without a higher version, or a reopen counting
            # from 1 again, reaches the same number with other text.
            doc.set_known_text(change.new_text, change.new_sha256, change.digest.marks)
        return shown.version, shown.open_id

    async def report(self, result: EditResult) -> EditResult:
        changes = list(self.plan.changes)
        diagnostics = await publish_after_edit(self.server, changes, self.locations, self.versions)
        result = replace(
            result,
            diagnostics=diagnostics or [],
            # Large files checked whole off the request path: publishDiagnostics follows.
            diagnostics_pending=diagnostics.pending or None,
        )
        if self.server.settings.save_after_edit or self.to_disk:
            result = await self._save_touched(changes, result)
        return result

    async def _apply_mixed(self, disk: disk_side.DiskSide) -> Outcome:
        """The disk side is prepared already; the editor's part is applied (verified), then the
        disk side committed; if the commit fails, what landed in the editor is rolled back, so
        the plan lands whole or not at all."""
        to_editor, to_disk, locations = self.to_editor, self.to_disk, self.locations
        states: dict[str, str] = {}
        editor_plan = Plan(self.plan.action, tuple(to_editor))
        if to_editor:
            outcome = await self._apply(editor_plan, self.plan.action)
            if outcome.error is not None:
                disk.abort()
                if outcome.error.code == Code.UNVERIFIED:
                    # The disk is never written on an unverified basis: say so, so the agent
                    # knows those files hold the old text whatever the buffers turn out to show.
                    names = sorted({p for c in to_disk for p in (c.path, c.target_path)})
                    outcome.error.message += (
                        f" The files not open in the editor ({', '.join(names)}) were not "
                        "written: they hold the old text."
                    )
                    outcome.error.details["notWritten"] = names
                return outcome
            states.update(outcome.states)
        for c in to_disk:
            c.before.release_lines()
        try:
            # No await between this check and the renames: no didOpen is handled in between.
            disk_side.check_still_closed(to_disk, locations, self.server.store)
            disk.commit()
        except EditError as exc:
            disk.abort()
            if not to_editor:
                return Outcome({c.path: "old" for c in to_disk}, exc)
            error = errors.partial(
                f"The editor applied its part, but the disk side failed: {exc.message}",
                exc.hint,
                files=[{"path": p, "state": "applied"} for p in states],
                committed=[{"path": p, "state": "applied"} for p in states],
            )
            back = await self._roll_back(editor_plan, error)
            back.details["diskError"] = {"code": str(exc.code), **exc.details}
            back.rolled_back = True  # type: ignore[attr-defined]
            return Outcome(states, back)
        for c in to_disk:
            states[c.path] = states[c.target_path] = "new"
        return Outcome(states, shown=outcome.shown if to_editor else {})

    async def _apply(self, plan: Plan, action: str) -> Outcome:
        server = self.server
        return await apply_and_verify(
            server,
            list(plan.changes),
            self.locations,
            server.store,
            server.verifier,
            server.encoding,
            f"agent-edit: {action}",
            server.settings.apply_timeout_ms / 1000,
            server.settings.verify_timeout_ms / 1000,
            transactional(server.client_capabilities, list(plan.changes)),
            refusal_applies_nothing(server.client_capabilities),
        )

    async def _roll_back(
        self, plan: Plan, error: EditError, unanswered: asyncio.Future[Any] | None = None
    ) -> EditError:
        """Part of a plan landed (editors are not transactional): send the inverse of what landed.

        Verified like any edit; only a verified rollback turns PARTIAL into PARTIAL_ROLLED_BACK.
        `unanswered`: the editor's answer to the plan itself, after a TIMEOUT that showed part
        of it: it may still be applying the rest, so its answer is waited for once more (and the
        rollback reverts what landed by then); a file not seen changed while it is still not
        answered may still change ("unknown"), so "every file is as it was" is never claimed.
        """
        if unanswered is not None and not unanswered.done():
            await self._answered_within(unanswered, self.server.settings.apply_timeout_ms / 1000)
        pending = unanswered is not None and not unanswered.done()
        snapshot = self.server.snapshot
        observed = {p: snapshot(r) for p, r in self.where.items()}
        committed, back = plan_rollback(plan, observed)
        # Files the edit may still change: the editor's (the disk side is aborted by now).
        disk = {c.path for c in self.to_disk}
        untouched = {c["path"] for c in committed if c["state"] == "not-applied"} - disk
        if not back.changes and not pending:
            return error
        outcome = await self._apply(back, "rollback") if back.changes else Outcome({})
        if outcome.error is not None and outcome.late_answer is not None:
            outcome = await self._rollback_answered_late(back, outcome)
        landed = [c for c in committed if c.get("state") == "applied"]
        # Every file that is not as it was (landed, or changed otherwise) must be reverted by the
        # rollback: one the rollback cannot touch (typed into meanwhile) is not "as it was".
        touched = [c for c in committed if c.get("state") != "not-applied"]
        if (
            outcome.error is None
            and not pending
            and all(c.get("revertible", True) for c in touched)
        ):
            return errors.partial_rolled_back(
                f"{error.message} What landed ({', '.join(c['path'] for c in landed)}) was "
                "undone again, so every file is as it was.",
                "Nothing is changed now. Read the files again, then send the edit again "
                "(the editor may have refused part of it because a file changed).",
                files=committed,
                committed=[],
            )
        observed = {p: snapshot(r) for p, r in self.where.items()}
        committed, _ = plan_rollback(plan, observed)
        if outcome.late_answer is not None and not outcome.late_answer.done():
            # The editor has not answered the rollback: it may still be restoring these files,
            # so "applied" (still in effect) is not known either.
            sent = {p for c in back.changes for p in (c.path, c.target_path)}
            late = "a rollback was sent and not answered yet: it may still restore the file"
            for c in committed:
                if c["state"] != "not-applied" and (c["path"] in sent or c.get("movedTo") in sent):
                    c["state"] = "unknown"
                    c["note"] = f"{c['note']}; {late}" if c.get("note") else late
        if pending and unanswered is not None and not unanswered.done():
            # Not changed yet, by an edit the editor may still be applying.
            late = "the editor has not answered the edit yet: it may still change the file"
            for c in committed:
                if c["state"] == "not-applied" and c["path"] in untouched:
                    c["state"], c["note"] = "unknown", late
        if outcome.error is not None:
            message = f"{error.message} The rollback of what landed could not be verified either."
        else:
            message = f"{error.message}{' What landed was undone again.' if back.changes else ''}"
        if pending:
            # Only then: here too when a file typed into could not be reverted, after the editor
            # had answered, where saying it had not was a false report.
            message += (
                " The editor has not answered the edit itself: the files it has not changed yet "
                "may still change (unknown)."
            )
        return errors.partial(
            message,
            "Some files are changed and some are not (details.files): inspect them with "
            "agentEdit.read and agentEdit.history, then undo or fix them; do not resend the "
            "whole edit.",
            files=committed,
            committed=[c for c in committed if c.get("state") == "applied"],
        )

    @staticmethod
    async def _answered_within(answer: asyncio.Future[Any], timeout_s: float) -> None:
        """Wait for the editor's answer (not cancelling it) until `timeout_s`; refusals too."""
        try:
            await asyncio.wait_for(asyncio.shield(answer), timeout_s)
        except Exception:  # noqa: BLE001, S110 - timed out, or an error answer: both are seen
            pass

    async def _rollback_answered_late(self, back: Plan, outcome: Outcome) -> Outcome:
        """The editor did not answer the rollback in time but shows part of it: busy, not gone.
        Its answer is waited for once more (applyTimeoutMs), then what it shows (verifyTimeoutMs),
        before the rollback is judged. The Outcome keeps `late_answer` only if still unanswered."""
        late = outcome.late_answer
        assert late is not None
        settings = self.server.settings
        try:
            answer = await asyncio.wait_for(asyncio.shield(late), settings.apply_timeout_ms / 1000)
        except TimeoutError:
            return outcome
        except Exception:  # noqa: BLE001 - an error answer: the rollback was refused
            return Outcome(outcome.states, outcome.error)
        if not getattr(answer, "applied", False):
            return Outcome(outcome.states, outcome.error)
        changes, store = list(back.changes), self.server.store

        def restored() -> bool:
            return all(
                v == "new" for c in changes for v in file_state(c, self.locations, store).values()
            )

        if await self.server.verifier.wait(restored, settings.verify_timeout_ms / 1000, True):
            return Outcome({p: "new" for p in outcome.states})
        return Outcome(outcome.states, outcome.error)

    async def _save_touched(self, changes: list[FileChange], result: EditResult) -> EditResult:
        """Ask the editor to save what the edit touched (`agentEdit/saveDocuments`).

        The client decides what is safe to save (VS Code's extension skips documents that were
        dirty before the edit, so the user's own unsaved text is never persisted); the result
        tells the agent, per file, what is now on disk. Files the disk writer changed are on
        disk already: saved, without asking (and the editor is asked only with saveAfterEdit).
        """
        written = {c.target_path for c in self.to_disk if c.change != "delete"}
        deleted = {c.target_path for c in changes if c.change == "delete"}
        uris = {
            c.target_path: self.locations[c.target_path].uri
            for c in changes
            if c.change != "delete" and c.target_path not in written
        }
        if not self.server.settings.save_after_edit:
            uris = {}
        # The version each document showed the edit at: a client saves a document only while it
        # is still at that version, so typing that came after the edit is not saved with it.
        versions = {
            uris[e.moved_to or e.path]: e.version
            for e in result.files
            if (e.moved_to or e.path) in uris and isinstance(e.version, int)
        }
        # A document the user typed in since the edit showed is not asked for (saved: false).
        ask = [u for t, u in uris.items() if self._still_at(t)]
        saved = await self._save_documents(ask, versions) if ask else set()
        texts = {c.target_path: c for c in changes if c.target_path in uris}
        files, saves = [], []
        for entry in result.files:
            target = entry.moved_to or entry.path
            if target in written:
                entry = replace(entry, saved=True)
            elif target in uris and uris[target] in saved:
                # The editor's word is not the disk: its save may have changed the text first
                # (format on save, trimmed whitespace, a final newline), so the disk is looked at.
                change = texts[target]
                changed, disk = self._changed_on_save(target, change.new_text)
                entry = replace(entry, saved=changed is None, changed_on_save=changed)
                if changed is not None and disk is not None:
                    saves.append(save_record(target, change.new_text, disk, change.bom))
            elif target in uris:
                entry = replace(entry, saved=False)
            files.append(entry)
        if saves and result.edit_id is not None:
            # The history keeps it with the edit: its undo restores the text from before it.
            self.server.history.saved(result.edit_id, saves)
        return replace(
            result,
            files=tuple(files),
            # Every file on disk as the edit left it: not an open buffer left unsaved (a mixed
            # edit without saveAfterEdit: only the disk writer's files are saved).
            saved=bool(written or uris)
            and all(f.saved for f in files if (f.moved_to or f.path) not in deleted),
        )

    def _changed_on_save(self, target: str, text: str) -> tuple[ChangedOnSave | None, str | None]:
        """What the editor's save of `target` changed from the edit's `text` (None: nothing),
        and the text the save left (None: the file could not be read as text)."""
        where = self.locations[target].abs_path
        doc = self.server.store.by_path(where)
        eol = doc.eol if doc is not None and "\r" not in text else None
        disk, why = saved_text(where, self.server.paths.policy.max_file_bytes, eol)
        return changed_on_save(target, text, disk, why), disk

    def _still_at(self, target: str) -> bool:
        """Whether the document of `target` is still in the state that showed the edit, as far
        as the server has heard (no change, close or reopen since), or is not open."""
        doc = self.server.store.by_path(self.locations[target].abs_path)
        if doc is None:
            return True
        shown = self.shown.get(target)
        return shown is not None and shown.still(doc)

    async def _save_documents(self, uris: list[str], versions: dict[str, int]) -> set[str]:
        """The URIs the editor says it saved; none when it cannot (no such request, timeout)."""
        server = self.server
        # `versions[i]`: the version of `uris[i]` that showed the edit (null: not known).
        params = {"uris": uris, "versions": [versions.get(u) for u in uris]}
        try:
            answer = await asyncio.wait_for(
                server.protocol.send_request_async("agentEdit/saveDocuments", params),
                server.settings.apply_timeout_ms / 1000,
            )
        except Exception as exc:  # noqa: BLE001 - a client without the request: nothing saved
            log.info("agentEdit/saveDocuments failed: %s", exc)
            return set()
        listed = getattr(answer, "saved", None)
        if listed is None and isinstance(answer, dict):
            listed = answer.get("saved")
        return {str(u) for u in listed or []}
