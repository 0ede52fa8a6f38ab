"""The agent-edit language server: a factory wiring the document store, commands and verification.

Handlers stay thin: validate arguments, take snapshots, call the pure engine, hand the plan to
`apply.apply_and_verify`, and return the engine's result object.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import threading
import time
from collections.abc import Generator
from typing import Any, TypeVar

from lsprotocol import types as t
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from lsp_server import __version__
from lsp_server.engine import edit_texts, recovery
from lsp_server.engine.diffing import plan_diff
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.history import NET_FILES, History, open_history
from lsp_server.engine.model import FileChange, Plan
from lsp_server.engine.patching import plan_patch
from lsp_server.engine.planner import check_precondition, plan_replace, plan_write, require_exists
from lsp_server.engine.policy import PathPolicy
from lsp_server.engine.results import success
from lsp_server.engine.text import Snapshot, absent, decode_file, describe_eol
from lsp_server.engine.undo import plan_rollback
from lsp_server.lsp import arguments, disk_side, protocol_reader
from lsp_server.lsp.apply import (
    Location,
    Outcome,
    Verifier,
    apply_and_verify,
    reports_late_by_name,
    transactional,
    uri_of,
)
from lsp_server.lsp.diagnostics import document_changed, document_opened, publish_after_edit
from lsp_server.lsp.documents import DocumentStore
from lsp_server.lsp.pending import PendingEdits
from lsp_server.lsp.session import Session, for_open
from lsp_server.lsp.settings import Settings, initial_policy, reconfigured
from lsp_server.lsp.workspace_paths import Resolved, WorkspacePaths, real_path_of_uri

log = logging.getLogger(__name__)


class AgentEditProtocol(LanguageServerProtocol):
    """Keeps open documents in our line store instead of pygls's whole-text documents."""

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):  # type: ignore[no-untyped-def]
        # pygls 2.1.1 files every handler's future under `msg_id` in `_request_futures`, but
        # pops only real request ids: notifications and the steps of generator handlers (every
        # executeCommand) get fresh uuids that stay forever, each holding its result (a read's
        # whole text). Drop them when done.
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        fut = self._request_futures.get(msg_id)
        if fut is not None:
            fut.add_done_callback(
                lambda f: (
                    self._request_futures.pop(msg_id, None)
                    if self._request_futures.get(msg_id) is f
                    else None
                )
            )

    @lsp_method(t.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: t.DidOpenTextDocumentParams) -> Any:
        server: AgentEditServer = self._server  # type: ignore[assignment]
        td = params.text_document
        server.store.open(td.uri, td.language_id, td.version, td.text)
        server.verifier.notify()
        if server.pending:
            server.pending.settle()
        document_opened(server, td.uri)
        trim_memory_soon()  # the message's copy of a big text is garbage now
        yield from ()

    @lsp_method(t.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: t.DidChangeTextDocumentParams) -> Any:
        server: AgentEditServer = self._server  # type: ignore[assignment]
        doc = server.store.get(params.text_document.uri)
        if doc is not None:
            encoding = server.encoding
            for change in params.content_changes:
                if isinstance(change, t.TextDocumentContentChangePartial):
                    r = change.range
                    doc.replace_range(
                        (r.start.line, r.start.character),
                        (r.end.line, r.end.character),
                        change.text,
                        encoding,
                    )
                else:
                    doc.replace_all(change.text)
            doc.version = params.text_document.version
            doc.reports += 1
            server.verifier.notify()
            if server.pending:
                server.pending.settle()
            document_changed(server, params.text_document.uri)
        else:
            log.warning("didChange for a document that is not open: %s", params.text_document.uri)
        yield from ()

    @lsp_method(t.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: t.DidCloseTextDocumentParams) -> Any:
        server: AgentEditServer = self._server  # type: ignore[assignment]
        server.store.close(params.text_document.uri)
        server.verifier.notify()
        trim_memory_soon()
        yield from ()


class AgentEditServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("agent-edit", __version__, protocol_cls=AgentEditProtocol)
        self.store = DocumentStore(real_path_of_uri)
        self.verifier = Verifier(self.store)
        self.session = Session()
        self.settings = Settings()
        # No workspace folder before `initialize`: every path is refused until then.
        self.paths = WorkspacePaths(PathPolicy())
        self.edit_lock = asyncio.Lock()
        self.history = History()  # replaced by the workspace's journal-backed one at initialize
        self.start_messages: list[str] = []  # shown at `initialized`
        self.pending = PendingEdits(
            self.store, lambda: self.history, self.snapshot, self._warn_user
        )

    def _start_io_async(self, stdin: Any = None, stdout: Any = None) -> None:
        """pygls's stdio server with a reader that answers malformed messages (protocol_reader)."""
        self._stop_event = threading.Event()
        reader = StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(protocol_reader.run_async(self._stop_event, reader, self.protocol))
        except BrokenPipeError:
            log.error("Connection to the client is lost! Shutting down the server.")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def _warn_user(self, message: str) -> None:
        self.window_show_message(t.ShowMessageParams(type=t.MessageType.Warning, message=message))

    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding
        return str(enc.value if hasattr(enc, "value") else enc or "utf-16")

    # -- snapshots -------------------------------------------------------------------------

    def snapshot(self, where: Resolved) -> Snapshot:
        """The file as the editor shows it now: the open buffer, else the disk."""
        doc = self.store.by_path(where.abs_path)
        if doc is not None:
            return doc.snapshot(where.rel)
        if os.path.isdir(where.abs_path):
            raise EditError(
                Code.NOT_FOUND,
                f"{where.rel} is a directory, not a file.",
                "Give the path of a file.",
                {"path": where.rel},
            )
        try:
            with open(where.abs_path, "rb") as f:
                cap = self.paths.policy.max_file_bytes
                data = f.read(cap + 1)
                if len(data) > cap:
                    # Only cap + 1 bytes were read: say the file's real size, not that.
                    size = max(os.fstat(f.fileno()).st_size, len(data))
                    raise EditError(
                        Code.TOO_LARGE,
                        f"{where.rel} is {size:,} bytes, over the {cap:,}-byte cap for edits.",
                        "Edit a smaller file, or raise the agentEdit.maxFileBytes setting if "
                        "this is intended.",
                        {"path": where.rel, "size": size, "cap": cap},
                    )
        except FileNotFoundError:
            return absent(where.rel)
        except OSError as exc:
            raise EditError(
                Code.NOT_FOUND,
                f"{where.rel} cannot be read: {exc.strerror}.",
                "Check the path and its permissions.",
                {"path": where.rel},
            ) from None
        return decode_file(where.rel, data, self.paths.policy.max_file_bytes)

    def token_now(self, where: Resolved, token: dict[str, Any] | None) -> dict[str, Any] | None:
        """`token` as it may be checked now: a version from another open of the file is dropped
        (`session.for_open`); a token left with nothing to prove is STALE, saying why."""
        doc = self.store.by_path(where.abs_path)
        fitted = for_open(token, doc.open_id if doc is not None else None)
        if fitted is not None and fitted.get("reopened") and fitted.get("sha256") is None:
            raise EditError(
                Code.STALE,
                f"{where.rel} was closed (or opened) in the editor since version "
                f"{token.get('version') if token else None} was read, and editors count versions "
                "again after a reopen, so that version proves nothing now.",
                "Read the file again with agentEdit.read, or pass expect: {sha256} from a read.",
                {
                    "expected": {
                        "version": token.get("version") if token else None,
                        "sha256": None,
                    },
                    "path": where.rel,
                    "reason": "REOPENED",
                },
            )
        return fitted

    def location(self, where: Resolved) -> Location:
        doc = self.store.by_path(where.abs_path)
        return Location(where.abs_path, doc.uri if doc else uri_of(where.abs_path))

    # -- history -----------------------------------------------------------------------------

    def open_history(self) -> None:
        self.history = open_history(self.paths.roots[0])
        # An apply the CLI was killed in the middle of is rolled back before anything reads a
        # file, and the history records it (before the listener: no notifications during
        # `initialize`); the user is told at `initialized`.
        for root in self.paths.roots:
            done = recovery.recover(root, wait=False)  # an apply running now is not waited for
            recovery.record(self.history, done)
            self.start_messages += done.messages()
        skipped = self.history.skipped_note()
        if skipped:
            log.warning("%s", skipped)
            self.start_messages.append(skipped)
        if self.history.journal_error:
            log.warning("agent-edit history: %s", self.history.journal_error)
            self.start_messages.append(
                f"agent-edit: {self.history.journal_error}; edits still work, but their history "
                "is kept in memory only (see the server log)."
            )
        self.history.listeners.append(self._history_changed)
        # A long session replays into millions of objects that live as long as the server: a
        # full collection would scan them all (~1 s for a 100k-file session), stalling every
        # request at some unlucky allocation. They are mostly acyclic; refcounts free them.
        gc.freeze()

    def show_start_messages(self) -> None:
        """What the start found (a rollback, an unusable state folder): said once."""
        for text in self.start_messages:
            self.window_show_message(t.ShowMessageParams(type=t.MessageType.Warning, message=text))
        self.start_messages = []

    def _history_changed(self, entry: Any) -> None:
        self.protocol.notify(
            "agentEdit/historyChanged",
            {"editId": entry.id, "action": entry.action, "outcome": entry.outcome},
        )
        caps = self.client_capabilities.workspace
        if caps and caps.code_lens and caps.code_lens.refresh_support:
            self.protocol.send_request("workspace/codeLens/refresh", None)

    def live(self, path: str) -> Snapshot | None:
        """What a history path shows now (buffer or disk), for net diffs and undo checks."""
        try:
            return self.snapshot(self.paths.resolve(path))
        except EditError:
            return None

    def recover_unfinished(self) -> None:
        """An edit begun but never finished (the server died mid-way): find out and say so."""
        for entry in self.history.unfinished():
            observed = {p: s for p in entry.paths if (s := self.live(p)) is not None}
            try:
                done = self.history.recover(entry.id, observed)
            except EditError as exc:
                log.warning("could not recover edit #%s: %s", entry.id, exc.message)
                continue
            self.window_show_message(
                t.ShowMessageParams(
                    type=t.MessageType.Warning,
                    message=f"agent-edit: edit #{done.id} ({done.action} of "
                    f"{', '.join(done.paths)}) was interrupted; it ended {done.outcome}. "
                    + (
                        "Nothing of it landed, so there is nothing to undo."
                        if done.outcome == str(Code.NOT_APPLIED)
                        else f"Review it with agentEdit.history, undo it with agentEdit.undo "
                        f"{{editId: {done.id}}}."
                    ),
                )
            )

    def code_lenses(self, uri: str) -> list[t.CodeLens]:
        doc = self.store.get(uri)
        if doc is None:
            return []
        try:
            rel = self.paths.resolve(uri).rel
        except EditError:
            return []
        lenses: list[t.CodeLens] = []
        for lens in self.history.lenses(rel, doc.snapshot()):
            rng = t.Range(
                start=t.Position(line=lens["line"], character=0),
                end=t.Position(line=lens["endLine"], character=0),
            )
            edit = {"editId": lens["editId"]}
            for title, command, arg in (
                (lens["title"], "agentEdit.history", {"format": "diff", **edit}),
                ("undo", "agentEdit.undo", edit),
                ("diff", "agentEdit.history", {"format": "diff", **edit}),
            ):
                lenses.append(
                    t.CodeLens(
                        range=rng, command=t.Command(title=title, command=command, arguments=[arg])
                    )
                )
        return lenses

    # -- carrying out plans ----------------------------------------------------------------

    async def carry_out(
        self,
        action: str,
        args: dict[str, Any],
        changes: list[FileChange],
        where: dict[str, Resolved],
        dry_run: bool,
        undoes: int | None = None,
    ) -> dict[str, Any]:
        """Journal, send, verify and record one plan; roll back what landed of a failed one."""
        plan = Plan(action, tuple(changes))
        for r in list(where.values()):
            where.setdefault(r.rel, r)
        locations = {p: self.location(r) for p, r in where.items()}
        # A file whose last edit is unverified may look older here than in the editor.
        self.pending.refuse_if_held({p: loc.abs_path for p, loc in locations.items()})
        # Resource operations the editor cannot do: on disk, or refused now for an open buffer.
        to_editor, to_disk = disk_side.split(
            changes, locations, self.store, disk_side.resource_operations(self.client_capabilities)
        )
        # The diff is made now, from the lent line lists, before anything awaits the editor.
        diff = plan_diff(changes)
        if dry_run:
            entry = self.history.record(action, args, plan=plan, outcome="dry-run")
            return success(entry.id, "dry-run", changes, diff=diff)
        # Files not open: checked and written to temporary files now (STALE here changes
        # nothing); put in place only after the editor's part is verified.
        disk = None
        if to_disk:
            disk = await disk_side.prepare(
                *disk_side.in_one_folder(to_disk, self.paths.roots), action
            )
        try:
            if disk is not None:
                recovery.record(self.history, disk.recovered)
            # The plan and its pre-images are on disk before the editor sees anything.
            edit_id = self.history.begin(plan, args, undoes=undoes)
            if disk is not None:
                outcome = await self._apply_mixed(plan, to_editor, to_disk, disk, where, locations)
            else:
                outcome = await self._apply(plan, locations, action)
        finally:
            if disk is not None:
                disk.abort()  # a no-op once committed or aborted
        if outcome.error is not None:
            error = outcome.error
            if error.code == Code.UNVERIFIED or outcome.unconfirmed:
                # Not finished: settled when the editor shows the files (lsp/pending.py).
                error.details["editId"] = edit_id
                # A late reporter still reports within a few idle timers (eglot: 0.5 s); an
                # editor that has not answered yet gets the time it may take to answer.
                grace = max(2 * self.settings.verify_timeout_ms / 1000, PENDING_GRACE_MIN_S)
                if outcome.late_answer is not None:
                    grace = max(grace, self.settings.apply_timeout_ms / 1000)
                # eglot applies file by file and reports late: its refusal proves nothing yet.
                refusal_settles = not self.verifier.reports_late or transactional(
                    self.client_capabilities, list(plan.changes)
                )
                self.pending.hold(
                    edit_id,
                    where,
                    locations,
                    outcome.unconfirmed,
                    grace,
                    outcome.late_answer,
                    refusal_settles,
                )
                error.recorded = True  # type: ignore[attr-defined]
                raise error
            if error.code == Code.PARTIAL and not getattr(error, "rolled_back", False):
                error = await self._roll_back(plan, where, locations, error)
            error.details["editId"] = edit_id
            self.history.finish(edit_id, str(error.code), error=error, committed=error.committed)
            error.recorded = True  # type: ignore[attr-defined]
            raise error
        versions: dict[str, int | None] = {}
        for c in changes:
            doc = self.store.by_path(locations[c.target_path].abs_path)
            if c.change == "delete":
                self.session.forget(c.path)
                continue
            if doc is not None:
                versions[c.target_path] = doc.version
                doc.set_known_text(c.new_text, c.new_sha256, c.digest.marks)
            if c.change == "move":
                self.session.forget(c.path)
            self.session.saw(
                c.target_path,
                versions.get(c.target_path),
                c.new_sha256,
                doc.open_id if doc is not None else None,
            )
        self.history.finish(edit_id, "applied", versions=versions)
        diagnostics = await publish_after_edit(self, changes, locations, versions)
        result = success(edit_id, "applied", changes, versions, diagnostics, diff=diff)
        if diagnostics.pending:
            # Large files checked whole off the request path: publishDiagnostics follows.
            result["diagnosticsPending"] = diagnostics.pending
        if self.settings.save_after_edit or to_disk:
            await self.save_touched(changes, locations, result, to_disk)
        return result

    async def _apply_mixed(
        self,
        plan: Plan,
        to_editor: list[FileChange],
        to_disk: list[FileChange],
        disk: disk_side.DiskSide,
        where: dict[str, Resolved],
        locations: dict[str, Location],
    ) -> Outcome:
        """The disk side is prepared already; the editor's part is applied (verified), then the
        disk side committed; if the commit fails, what landed in the editor is rolled back, so
        the plan lands whole or not at all."""
        states: dict[str, str] = {}
        editor_plan = Plan(plan.action, tuple(to_editor))
        if to_editor:
            outcome = await self._apply(editor_plan, locations, plan.action)
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
            disk_side.check_still_closed(to_disk, locations, self.store)
            disk.commit()
        except EditError as exc:
            disk.abort()
            if not to_editor:
                return Outcome({c.path: "old" for c in to_disk}, exc)
            error = EditError(
                Code.PARTIAL,
                f"The editor applied its part, but the disk side failed: {exc.message}",
                exc.hint,
                {"files": [{"path": p, "state": "applied"} for p in states]},
                committed=[{"path": p, "state": "applied"} for p in states],
            )
            back = await self._roll_back(editor_plan, where, locations, error)
            back.details["diskError"] = {"code": str(exc.code), **exc.details}
            back.rolled_back = True  # type: ignore[attr-defined]
            return Outcome(states, back)
        for c in to_disk:
            states[c.path] = states[c.target_path] = "new"
        return Outcome(states)

    async def _apply(self, plan: Plan, locations: dict[str, Location], action: str) -> Outcome:
        return await apply_and_verify(
            self,
            list(plan.changes),
            locations,
            self.store,
            self.verifier,
            self.encoding,
            f"agent-edit: {action}",
            self.settings.apply_timeout_ms / 1000,
            self.settings.verify_timeout_ms / 1000,
            transactional(self.client_capabilities, list(plan.changes)),
        )

    async def _roll_back(
        self,
        plan: Plan,
        where: dict[str, Resolved],
        locations: dict[str, Location],
        error: EditError,
    ) -> EditError:
        """Part of a plan landed (editors are not transactional): send the inverse of what landed.

        Verified like any edit; only a verified rollback turns PARTIAL into PARTIAL_ROLLED_BACK.
        """
        observed = {p: self.snapshot(r) for p, r in where.items()}
        committed, back = plan_rollback(plan, observed)
        if not back.changes:
            return error
        outcome = await self._apply(back, locations, "rollback")
        landed = [c for c in committed if c.get("state") == "applied"]
        # Every file that is not as it was (landed, or changed otherwise) must be reverted by the
        # rollback: one the rollback cannot touch (typed into meanwhile) is not "as it was".
        touched = [c for c in committed if c.get("state") != "not-applied"]
        if outcome.error is None and all(c.get("revertible", True) for c in touched):
            return EditError(
                Code.PARTIAL_ROLLED_BACK,
                f"{error.message} What landed ({', '.join(c['path'] for c in landed)}) was "
                "undone again, so every file is as it was.",
                "Nothing is changed now. Read the files again, then send the edit again "
                "(the editor may have refused part of it because a file changed).",
                {"files": committed},
                committed=[],
            )
        observed = {p: self.snapshot(r) for p, r in where.items()}
        committed, _ = plan_rollback(plan, observed)
        return EditError(
            Code.PARTIAL,
            f"{error.message} The rollback of what landed could not be verified either.",
            "Some files are changed and some are not (details.files): inspect them with "
            "agentEdit.read and agentEdit.history, then undo or fix them; do not resend the "
            "whole edit.",
            {"files": committed},
            committed=[c for c in committed if c.get("state") == "applied"],
        )

    async def save_touched(
        self,
        changes: list[FileChange],
        locations: dict[str, Location],
        result: dict[str, Any],
        on_disk: list[FileChange] | None = None,
    ) -> None:
        """Ask the editor to save what the edit touched (`agentEdit/saveDocuments`).

        The client decides what is safe to save (VS Code's extension skips documents that were
        dirty before the edit, so the user's own unsaved text is never persisted); the result
        tells the agent, per file, what is now on disk. Files the disk writer changed are on
        disk already: saved, without asking (and the editor is asked only with saveAfterEdit).
        """
        written = {c.target_path for c in on_disk or [] if c.change != "delete"}
        uris = {
            c.target_path: locations[c.target_path].uri
            for c in changes
            if c.change != "delete" and c.target_path not in written
        }
        if not self.settings.save_after_edit:
            uris = {}
        saved = await self._save_documents(list(uris.values())) if uris else set()
        for entry in result["files"]:
            target = entry.get("movedTo") or entry["path"]
            if target in written:
                entry["saved"] = True
            elif target in uris:
                entry["saved"] = uris[target] in saved
        result["saved"] = bool(written or uris) and all(u in saved for u in uris.values())

    async def _save_documents(self, uris: list[str]) -> set[str]:
        """The URIs the editor says it saved; none when it cannot (no such request, timeout)."""
        try:
            answer = await asyncio.wait_for(
                self.protocol.send_request_async("agentEdit/saveDocuments", {"uris": uris}),
                self.settings.apply_timeout_ms / 1000,
            )
        except Exception as exc:  # noqa: BLE001 - a client without the request: nothing saved
            log.info("agentEdit/saveDocuments failed: %s", exc)
            return set()
        listed = getattr(answer, "saved", None)
        if listed is None and isinstance(answer, dict):
            listed = answer.get("saved")
        return {str(u) for u in listed or []}


RECOVERY_DELAY_S = 0.5
PENDING_GRACE_MIN_S = 1.0

EDIT_ACTIONS = {
    "replace": "replace",
    "write": "write",
    "apply_patch": "applyPatch",
    "undo": "undo",
}


def _result(fn):  # type: ignore[no-untyped-def]
    """Domain failures become `{ok: false, ...}` results; protocol errors stay JSON-RPC errors.

    A refused edit action is a history entry too (the agent's attempt is part of the record).
    """

    action = fn.__name__.rstrip("_")

    async def wrapper(ls: AgentEditServer, *args: Any) -> dict[str, Any]:
        try:
            return await fn(ls, *args)
        except EditError as err:
            if action in EDIT_ACTIONS and not getattr(err, "recorded", False):
                raw = args[0] if args and isinstance(args[0], dict) else {}
                try:
                    entry = ls.history.record(EDIT_ACTIONS[action], raw, error=err)
                    err.details.setdefault("editId", entry.id)
                except Exception:  # noqa: BLE001 - a record failure must not hide the refusal
                    log.exception("could not record a refused %s", action)
            return err.to_result()
        finally:
            # Every command leaves file-sized garbage behind (texts, diffs, JSON answers).
            trim_memory_soon()

    wrapper.__name__ = fn.__name__
    return wrapper


def create_server() -> AgentEditServer:
    server = AgentEditServer()

    @server.feature(t.INITIALIZE)
    def initialize(ls: AgentEditServer, params: t.InitializeParams) -> None:
        roots: list[str] = []
        for folder in params.workspace_folders or []:
            path = to_fs_path(folder.uri)
            if path:
                roots.append(path)
        if not roots and params.root_uri:
            path = to_fs_path(params.root_uri)
            if path:
                roots.append(path)
        if not roots and params.root_path:
            roots.append(params.root_path)
        ls.settings = ls.settings.updated(params.initialization_options)
        ls.verifier.reports_late = reports_late_by_name(
            params.client_info.name if params.client_info else None
        )
        policy, problems = initial_policy(roots, params.initialization_options)
        for problem in problems:
            log.error("%s; that setting is ignored", problem)
        ls.paths = WorkspacePaths(policy)
        ls.open_history()

    @server.feature(t.INITIALIZED)
    def initialized(ls: AgentEditServer, params: t.InitializedParams) -> None:
        ls.show_start_messages()
        # An editor re-opens its buffers right after `initialized`; judge an interrupted edit
        # from those buffers, not from the disk alone, so wait for the didOpens first.
        asyncio.get_running_loop().call_later(RECOVERY_DELAY_S, ls.recover_unfinished)

    @server.feature(t.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: AgentEditServer, params: t.CodeLensParams) -> list[t.CodeLens]:
        return ls.code_lenses(params.text_document.uri)

    @server.feature(t.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(
        ls: AgentEditServer, params: t.DidChangeConfigurationParams
    ) -> None:
        ls.settings = ls.settings.updated(params.settings, running=True)
        policy, problems = reconfigured(ls.paths.policy, params.settings)
        ls.paths = WorkspacePaths(policy)
        if problems:
            ls.window_show_message(
                t.ShowMessageParams(type=t.MessageType.Warning, message="; ".join(problems))
            )

    @server.feature(t.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(
        ls: AgentEditServer, params: t.DidChangeWorkspaceFoldersParams
    ) -> None:
        # pygls advertises folder change notifications: a folder the user closed must stop being
        # editable at once, and one they added must become so. The history stays where it is.
        ls.paths = WorkspacePaths(
            ls.paths.policy.with_folders(
                added=[f.uri for f in params.event.added],
                removed=[f.uri for f in params.event.removed],
            )
        )

    @server.feature(t.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AgentEditServer, params: t.DidSaveTextDocumentParams) -> None:
        pass  # registered so clients send it; the buffer content already is the truth

    @server.command("agentEdit.read")
    @_result
    async def read(ls: AgentEditServer, *args: Any) -> dict[str, Any]:
        a = arguments.parse("agentEdit.read", args)
        where = ls.paths.resolve(a["path"])
        doc = ls.store.by_path(where.abs_path)
        if doc is not None:
            doc.sha256  # noqa: B018 - hashed by the document, which keeps marks for later edits
        snap = ls.snapshot(where)
        require_exists(snap)
        lines = snap.lines
        total = len(lines) - (1 if lines[-1] == "" else 0)
        start = a.get("startLine") or 1
        end = a.get("endLine") or total
        if start < 1 or end < start - 1:
            raise EditError(
                Code.INVALID_ARGUMENT,
                f"The line range {start}-{end} is not valid.",
                f"Lines are 1-based; {where.rel} has {total} lines.",
                {"argument": "startLine", "lines": total},
            )
        ranged = "startLine" in a or "endLine" in a
        if ranged:
            chosen = lines[start - 1 : end]
            numbered = a.get("lineNumbers", True)
        else:
            chosen = lines
            numbered = a.get("lineNumbers", False)
        if numbered:
            text = "".join(
                f"{start + i:6d}\t{line}"
                for i, line in enumerate(chosen)
                if line or i < len(chosen) - 1
            )
        else:
            text = snap.text if not ranged else "".join(chosen)
        ls.session.saw(
            where.rel,
            snap.version if snap.source == "buffer" else None,
            snap.sha256,
            doc.open_id if doc is not None else None,
        )
        return {
            "ok": True,
            "path": where.rel,
            "text": text,
            "version": snap.version,
            "sha256": snap.sha256,
            "source": snap.source,
            "eol": describe_eol(snap.text),
            "bom": snap.bom,
            "lines": total,
            "startLine": start,
            "endLine": min(end, total),
        }

    @server.command("agentEdit.replace")
    @_result
    async def replace(ls: AgentEditServer, *args: Any) -> dict[str, Any]:
        a = arguments.parse("agentEdit.replace", args)
        where = ls.paths.resolve(a["path"])
        # What the agent knew when it sent this request: a racing edit must not inherit the
        # token refreshed by the edit it raced with.
        known = ls.session.known(where.rel, a.get("expect"))
        async with ls.edit_lock:
            snap = ls.snapshot(where)
            require_exists(snap)
            known = ls.token_now(where, known)
            # oldText is itself checked against the buffer as it is now, so without a read or
            # `expect` the replace still cannot land on text the agent did not name.
            check_precondition(snap, known, None, required=False)
            change = plan_replace(
                snap,
                a["oldText"],
                a["newText"],
                replace_all=a.get("replaceAll", False),
                match=a.get("match", "exact"),
            )
            return await ls.carry_out(
                "replace", a, [change], {where.rel: where}, a.get("dryRun", False)
            )

    @server.command("agentEdit.write")
    @_result
    async def write(ls: AgentEditServer, *args: Any) -> dict[str, Any]:
        a = arguments.parse("agentEdit.write", args)
        where = ls.paths.resolve(a["path"])
        known = ls.session.known(where.rel, a.get("expect"))
        async with ls.edit_lock:
            snap = ls.snapshot(where)
            known = ls.token_now(where, known)
            if snap.exists:
                # Overwriting replaces text the agent may never have seen: it needs a read or
                # `expect` (unless the requireRead setting is off).
                check_precondition(snap, known, None, required=ls.settings.require_read)
            elif a.get("expect"):
                raise EditError(
                    Code.NOT_FOUND,
                    f"{where.rel} does not exist, but expect was given for it.",
                    "Drop expect to create the file, or check the path.",
                    {"path": where.rel},
                )
            change = plan_write(snap, a["text"])
            if change.change == "update" and not change.edits:
                raise EditError(
                    Code.INVALID_ARGUMENT,
                    f"NO_CHANGE: {where.rel} already has exactly this text.",
                    "Nothing to do; send different text to change it.",
                    {"argument": "text", "reason": "NO_CHANGE"},
                )
            return await ls.carry_out(
                "write", a, [change], {where.rel: where}, a.get("dryRun", False)
            )

    @server.command("agentEdit.applyPatch")
    @_result
    async def apply_patch(ls: AgentEditServer, *args: Any) -> dict[str, Any]:
        a = arguments.parse("agentEdit.applyPatch", args)
        expect = {
            r.rel: ls.session.known(r.rel, v)
            for k, v in (a.get("expect") or {}).items()
            if (r := ls.paths.resolve(k))
        }
        known = {p: ls.session.known(p, None) for p in ls.session.reads}  # when it was sent
        async with ls.edit_lock:
            where: dict[str, Resolved] = {}

            def get_snapshot(path: str) -> Snapshot:
                r = ls.paths.resolve(path)
                where[r.rel] = r
                snap = ls.snapshot(r)
                return snap

            plan = plan_patch(a["patch"], get_snapshot)
            for c in plan.changes:
                if c.moved_to and c.moved_to not in where:
                    where[c.moved_to] = ls.paths.resolve(c.moved_to, argument="moveTo")
                if c.before.exists:
                    check_precondition(
                        c.before,
                        ls.token_now(where[c.path], expect.get(c.path)),
                        ls.token_now(where[c.path], known.get(c.path)),
                        required=False,  # context and removed lines are checked as they are now
                    )
            return await ls.carry_out(
                "applyPatch", a, list(plan.changes), where, a.get("dryRun", False)
            )

    @server.command("agentEdit.undo")
    @_result
    async def undo(ls: AgentEditServer, *args: Any) -> dict[str, Any]:
        a = arguments.parse("agentEdit.undo", args)
        edit_id = a["editId"]
        async with ls.edit_lock:
            ls.history.refresh()
            where = {p: ls.paths.resolve(p) for p in ls.history.undo_paths(edit_id)}
            current = {p: ls.snapshot(r) for p, r in where.items()}
            plan = ls.history.plan_undo(edit_id, current)
            return await ls.carry_out(
                "undo", a, list(plan.changes), where, a.get("dryRun", False), undoes=edit_id
            )

    @server.command("agentEdit.history")
    @_result
    async def history(ls: AgentEditServer, *args: Any) -> dict[str, Any]:
        a = arguments.parse("agentEdit.history", args)
        ls.history.refresh()
        if a.get("texts"):
            return edit_texts.texts_result(ls.history, a.get("editId"), ls.live)
        files = a.get("netLimit", NET_FILES)
        if a.get("format", "json") == "diff":
            text = await in_slices(ls.history.iter_diff_text(ls.live, a.get("editId"), files))
            return {"ok": True, "diff": text}
        return await in_slices(
            ls.history.iter_json(
                live=ls.live, edit_id=a.get("editId"), limit=a.get("limit", 200), net_files=files
            )
        )

    return server


SLICE_S = 0.002

T = TypeVar("T")


async def in_slices(gen: Generator[None, None, T]) -> T:
    """Run a history generator (`History.iter_*`) in slices of about SLICE_S, letting the event
    loop serve other requests (a read, a didChange) between them: a 100k-file history must not
    stall them. Short slices: pygls reads each message from stdin in a few thread round trips,
    one loop turn each, so a request sent meanwhile waits a few slices before it even parses."""
    while True:
        end = time.perf_counter() + SLICE_S
        try:
            next(gen)  # at least one step a slice, however coarse the clock
            while time.perf_counter() < end:
                next(gen)
        except StopIteration as stop:
            result: T = stop.value
            return result
        await asyncio.sleep(0)


_LIBC: Any = None


def _tune_malloc() -> None:
    """One malloc arena, and a way to hand freed file-sized buffers back to the OS.

    Every edit of a big file makes a few file-sized strings (the new text, its UTF-8 bytes for the
    hash, the latter on a worker thread). glibc keeps freed ones in per-thread heaps it does not
    give back: ~45 MB more RSS on a 100k-line file (bench/bench_history_server.py). One arena plus
    `malloc_trim` when the server goes idle keeps RSS flat without slowing the edit itself (a
    fixed mmap threshold did that too, but page-faulted every buffer in again: 2x the round trip).
    """
    global _LIBC
    if sys.platform != "linux" or os.environ.get("AGENT_EDIT_MALLOC_DEFAULTS"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-8, 1)  # M_ARENA_MAX
        _LIBC = libc
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass


class _Trim:
    loop: asyncio.AbstractEventLoop | None = None
    handle: asyncio.TimerHandle | None = None
    since = 0.0  # when the pending trim was first asked for


TRIM_IDLE_S = 0.05
TRIM_MAX_WAIT_S = 0.1


def trim_memory_soon() -> None:
    """After a command, once the server is idle, return freed heap memory to the OS.

    Each command postpones the trim until the server has been idle for TRIM_IDLE_S (the next
    edit would only make new garbage), but an agent that edits without pause still gets one every
    TRIM_MAX_WAIT_S: freed file-sized texts otherwise pile up between trims (10,000 edits of a
    100k-line file, bench/bench_history_server.py: RSS right after the burst ~111 MB with no trim
    during it, 93-99 MB with one every 0.25 s, ~90 MB every 0.1 s).
    """
    if _LIBC is None:
        return
    loop = asyncio.get_running_loop()
    now = loop.time()
    if _Trim.loop is not loop:  # a server started again in this process: forget the old loop's
        _Trim.loop, _Trim.handle = loop, None
    if _Trim.handle is not None:  # pending (a trim that ran has cleared it)
        if now - _Trim.since >= TRIM_MAX_WAIT_S:
            return  # overdue: let the pending one run
        _Trim.handle.cancel()
    else:
        _Trim.since = now

    def trim() -> None:
        _Trim.handle = None
        _LIBC.malloc_trim(0)

    _Trim.handle = loop.call_later(TRIM_IDLE_S, trim)


def serve() -> None:
    logging.basicConfig(level=logging.WARNING)
    _tune_malloc()
    create_server().start_io()
