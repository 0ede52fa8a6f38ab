"""The agent-edit language server: lifecycle, document sync, and the actions as commands.

Each `agentEdit.<action>` command runs `lsp_server.actions` with the server's context
(`AgentEditServer.context`: open buffers, the editor's applier in lsp/editor_applier.py, the
workspace history); the command logic itself lives in the actions, shared with the CLI and MCP.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from lsprotocol import types as t
from pygls.exceptions import JsonRpcInvalidParams
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from lsp_server import __version__, actions
from lsp_server.actions import InvalidArguments
from lsp_server.actions.paths import Resolved, WorkspacePaths
from lsp_server.actions.session import Session
from lsp_server.engine import files, recovery, state
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.history import History, open_history
from lsp_server.engine.policy import PathPolicy
from lsp_server.engine.results import wire
from lsp_server.engine.text import Snapshot
from lsp_server.lsp import file_format, lenses, protocol_reader
from lsp_server.lsp.apply import Location, Verifier, reports_late_by_name, uri_of
from lsp_server.lsp.diagnostics import document_changed, document_opened
from lsp_server.lsp.documents import (
    DocumentStore,
    final_break_in_changes_by_name,
    lf_lines_by_name,
)
from lsp_server.lsp.editor_context import EditorContext
from lsp_server.lsp.endpoint import Endpoint
from lsp_server.lsp.pending import PendingEdits
from lsp_server.lsp.settings import Settings, initial_policy, reconfigured
from lsp_server.lsp.workspace_paths import real_path_of_uri

log = logging.getLogger(__name__)

T = TypeVar("T")


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
        doc = server.store.open(td.uri, td.language_id, td.version, td.text)
        server.document_reported(doc.path)
        document_opened(server, td.uri)
        trim_memory_soon()  # the message's copy of a big text is garbage now
        yield from ()

    @lsp_method(t.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: t.DidChangeTextDocumentParams) -> Any:
        server: AgentEditServer = self._server  # type: ignore[assignment]
        uri, version = params.text_document.uri, params.text_document.version
        doc = server.store.change(uri, version, _changes(params), server.encoding)
        if doc is None:
            log.warning("didChange for a document that is not open: %s", uri)
        else:
            server.document_reported(doc.path)
            document_changed(server, uri)
        yield from ()

    @lsp_method(t.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: t.DidCloseTextDocumentParams) -> Any:
        server: AgentEditServer = self._server  # type: ignore[assignment]
        doc = server.store.close(params.text_document.uri)
        server.verifier.notify(doc.path if doc is not None else None)
        trim_memory_soon()
        yield from ()


def _changes(
    params: t.DidChangeTextDocumentParams,
) -> list[tuple[tuple[int, int] | None, tuple[int, int] | None, str]]:
    """A didChange's content changes as DocumentStore.change takes them."""
    out: list[tuple[tuple[int, int] | None, tuple[int, int] | None, str]] = []
    for c in params.content_changes:
        if isinstance(c, t.TextDocumentContentChangePartial):
            r = c.range
            out.append(((r.start.line, r.start.character), (r.end.line, r.end.character), c.text))
        else:
            out.append((None, None, c.text))
    return out


def _workspace_roots(params: t.InitializeParams) -> list[str]:
    """The workspace folders `initialize` names (else its rootUri, else its rootPath)."""
    roots = [p for f in params.workspace_folders or [] if (p := to_fs_path(f.uri))]
    if not roots and params.root_uri and (path := to_fs_path(params.root_uri)):
        roots.append(path)
    if not roots and params.root_path:
        roots.append(params.root_path)
    return roots


class AgentEditServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("agent-edit", __version__, protocol_cls=AgentEditProtocol)
        self.store = DocumentStore(real_path_of_uri)
        self.verifier = Verifier(self.store)
        self.session = Session()  # the editor's own agents'; an endpoint caller has its own
        # Found by `agent-edit mcp`, the CLI and other servers on the workspace (lsp/endpoint.py).
        self.endpoint = Endpoint(self)
        self.settings = Settings()
        # No workspace folder before `initialize`: every path is refused until then.
        self.paths = WorkspacePaths(PathPolicy())
        self.edit_lock = asyncio.Lock()
        self.history = History()  # replaced by the workspace's journal-backed one at initialize
        self.start_messages: list[str] = []  # shown at `initialized`
        self.lone_cr_in_line = False  # set from the client's name at `initialize`
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

    def shutdown(self) -> None:
        self.endpoint.stop()
        super().shutdown()

    def start_session(self, params: t.InitializeParams) -> None:
        """`initialize`: the workspace, the settings, the history, and the endpoint."""
        roots = _workspace_roots(params)
        client = params.client_info.name if params.client_info else None
        self.settings = self.settings.updated(params.initialization_options)
        self.verifier.reports_late = reports_late_by_name(client)
        self.store.lf_lines = lf_lines_by_name(client)
        self.store.final_break_in_changes = final_break_in_changes_by_name(client)
        # eglot ends lines at LF only, not at a lone CR as LSP does (editor_context.py).
        self.lone_cr_in_line = "eglot" in (client or "").lower()
        policy, problems = initial_policy(roots, params.initialization_options)
        for problem in problems:
            log.error("%s; that setting is ignored", problem)
        self.paths = WorkspacePaths(policy)
        self.open_history()
        # Found by `agent-edit mcp`, the CLI and other servers on this workspace (discovery.py).
        self.endpoint.start(roots, client or "", params.process_id)

    def document_reported(self, path: str | None = None) -> None:
        """A document (at real path `path`) opened or changed: edits waiting to be seen look
        again."""
        self.verifier.notify(path)
        if self.pending:
            self.pending.settle()

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
            return file_format.with_file_bom(doc, doc.snapshot(where.rel), where.abs_path)
        # The disk reader every front uses (engine/files.py), so the server answers as the CLI
        # does: a FIFO swapped in after the path check is refused, not opened blocking (which
        # froze the server), and what was read goes with the snapshot, so the disk writer
        # refuses (STALE) a file that changed between this read and its write.
        root = "/" if os.path.isabs(where.rel) else self.paths.roots[0]  # several folders
        return files.read_snapshot(root, where.rel, self.paths.policy.max_file_bytes)

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
            pending = [
                root
                for root in self.paths.roots
                if recovery.rollback_pending(state.workspace_state_path(root), entry.pid)
            ]
            if pending:
                # Its disk apply is not rolled back yet (another process holds the lock to do
                # it, or its rollback failed): the disk is half-way, so the edit waits for the
                # run that completes the rollback rather than be settled PARTIAL from it.
                self.window_show_message(
                    t.ShowMessageParams(
                        type=t.MessageType.Warning,
                        message=f"agent-edit: edit #{entry.id} was interrupted and the "
                        f"rollback of its disk apply in {', '.join(pending)} is still pending; "
                        "the next agent-edit command there rolls it back and settles the edit "
                        "(see agentEdit.history).",
                    )
                )
                continue
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
        return lenses.code_lenses(self.history.lenses(rel, doc.snapshot()))

    # -- the actions' context -----------------------------------------------------------

    def context(self, session: Session | None = None, within: str | None = None) -> EditorContext:
        """The actions' context for `session`'s caller (default: the editor's own agents);
        `within`: a folder no path may leave (an MCP server's root, below a workspace folder)."""
        return EditorContext(self, self.session if session is None else session, within)


RECOVERY_DELAY_S = 0.5


def _command(name: str) -> Callable[..., Awaitable[dict[str, Any]]]:
    """The `agentEdit.<name>` command: the action, for the editor's session; malformed
    arguments are InvalidParams (a protocol error), domain failures `ok: false` results."""

    async def handler(ls: AgentEditServer, *args: Any) -> dict[str, Any]:
        try:
            return wire(await actions.run(ls.context(), name, args))
        except InvalidArguments as exc:
            raise JsonRpcInvalidParams(message=f"Invalid Params: {exc.message}") from None
        finally:
            trim_memory_soon()  # every command leaves file-sized garbage (texts, diffs, JSON)

    handler.__name__ = name
    return handler


def create_server() -> AgentEditServer:
    server = AgentEditServer()

    @server.feature(t.INITIALIZE)
    def initialize(ls: AgentEditServer, params: t.InitializeParams) -> None:
        ls.start_session(params)

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
        ls.endpoint.update(ls.paths.roots)  # found for the folders it serves now

    @server.feature(file_format.DOCUMENT_FORMAT)
    def document_format(ls: AgentEditServer, params: Any) -> None:
        doc = file_format.declare(ls.store, params)
        if doc is not None:
            ls.document_reported(doc.path)  # its text changed: edits waiting to be seen look

    @server.feature(t.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AgentEditServer, params: t.DidSaveTextDocumentParams) -> None:
        pass  # registered so clients send it; the buffer content already is the truth

    for name in actions.NAMES:
        server.command(f"agentEdit.{name}")(_command(name))

    return server


SLICE_S = 0.002


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
