"""Syntax diagnostics in the editor and in edit results: the LSP side of `engine/syntax/`.

Owns, per server, one incremental `DocumentSyntax` per recently touched file (LRU-capped), and:
- publishes `textDocument/publishDiagnostics` (source `agent-edit`, with the document version) for
  every file an applied edit touched: all its current syntax errors; an empty list clears errors
  published before (also for a deleted or moved-away file), and is not sent when there is nothing
  to clear (it would cost every clean edit a notification and change nothing in the editor);
- asks the client to re-pull (`workspace/diagnostic/refresh`) when it advertises support;
- gives the edit result its `diagnostics`: the syntax errors the edit introduced, as
  `{path, line, column, endLine, endColumn, message, kind}` (1-based, columns in code points),
  and `diagnosticsPending`: the files whose whole check runs after the answer.

What an edit costs here does not grow with the file: small files (< 64 KiB) reparse whole
(incrementally, well under a millisecond to a few ms); larger ones get a region check (the edited
top-level nodes parsed alone). When that cannot decide (the file was broken, the region has
errors, the edit cannot be bounded, no tree yet) the file is parsed whole in a worker thread and
published when done; the result lists it in `diagnosticsPending`, and its `diagnostics` are
what the edited region showed. Edits are recorded from the plan's line edits (O(edit)); texts
are identified by their sha256, so a document's tree is only reused for the text it describes.

Hooks for the server (nothing here runs unless they are called):
- after a verified edit, in the editor applier (lsp/editor_applier.py):
      diagnostics = await publish_after_edit(self, changes, locations, versions)
      (`diagnostics.pending` lists the paths whose check is still running)
- in didOpen: `document_opened(server, uri)` parses a large document in a worker thread shortly
  after the open, so the first agent edit on it gets a region check.
- in didChange: `document_changed(server, uri)` re-publishes a document that has published
  errors once the user stops typing (debounced), so a fix the user typed clears them.
  Documents without published errors cost nothing here: parsing stays off the keystroke path.

Whole parses run in worker threads and read the text in chunks, so py-tree-sitter lets the GIL
go between reads; none holds a lock the event loop waits for (`DocumentSyntax.parse_detached`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from lsprotocol import types as t

from lsp_server.engine.model import FileChange
from lsp_server.engine.syntax import (
    REGION_ABOVE_BYTES,
    DocumentSyntax,
    SyntaxProblem,
    introduced_errors,
    language_for,
)
from lsp_server.engine.text import sha256_text

log = logging.getLogger(__name__)

SOURCE = "agent-edit"
# Documents kept parsed; a 100k-line tree is tens of MB, so only the recently touched ones.
MAX_DOCUMENTS = 32
# Quiet time after the user's last keystroke before a document with errors is re-published.
DEBOUNCE_S = 0.4
# How long after didOpen a large document's parse starts.
WARM_DELAY_S = 0.05


class _Location(Protocol):
    abs_path: str
    uri: str


class Introduced(list[dict[str, Any]]):
    """The result's `diagnostics` (errors the edit introduced), plus `pending`: the paths whose
    whole-file check runs off the request path, published later with publishDiagnostics."""

    pending: list[str]

    def __init__(self) -> None:
        super().__init__()
        self.pending = []


@dataclass(frozen=True)
class Analysis:
    """What is known about one touched file right after an edit."""

    # All its problems (what to publish now), or None when a whole parse must say (pending).
    after: list[SyntaxProblem] | None
    # The ones the edit introduced; when pending, what the edited region showed (provisional).
    introduced: list[SyntaxProblem]

    @property
    def pending(self) -> bool:
        return self.after is None


class SyntaxDiagnostics:
    """One server's parsed documents and what it last published."""

    def __init__(self) -> None:
        self._syntax: OrderedDict[str, DocumentSyntax] = OrderedDict()
        # URIs whose last published list was not empty (only those need a refresh on typing).
        self._with_errors: set[str] = set()
        # The document version each URI's diagnostics were last published for.
        self._published_version: dict[str, int | None] = {}
        self._pending: dict[str, asyncio.Task[None]] = {}
        # Whole parses running off the request path, per file, and the files whose text changed
        # while theirs ran (they parse again).
        self._parsing: dict[str, asyncio.Task[None]] = {}
        self._parse_again: set[str] = set()
        # (uri, version) each file's syntax text was last brought to by an edit.
        self._edited: dict[str, tuple[str, int | None]] = {}
        # Guards the dict of documents only: parsing holds each document's own lock, or none.
        self._lock = threading.Lock()

    def _remember(self, abs_path: str, syn: DocumentSyntax) -> None:
        with self._lock:
            self._syntax[abs_path] = syn
            self._syntax.move_to_end(abs_path)
            while len(self._syntax) > MAX_DOCUMENTS:
                self._syntax.popitem(last=False)

    def syntax(self, abs_path: str) -> DocumentSyntax | None:
        with self._lock:
            return self._syntax.get(abs_path)

    # -- parsing (worker thread) -----------------------------------------------------------

    def problems_of(self, abs_path: str, language: str, text: str) -> list[SyntaxProblem]:
        """The syntax problems of `text`, reparsing the file's tree incrementally.

        For worker threads: the whole parse holds no lock, so edits and region checks on the
        event loop never wait for it.
        """
        syn = self.syntax(abs_path)
        if syn is None or syn.language != language:
            syn = DocumentSyntax(language, text)
            self._remember(abs_path, syn)
        else:
            syn.set_text(text)
            syn.text_id = None  # not an agent edit's text: the next edit checks from scratch
        while True:
            problems, current = syn.parse_detached()
            if current:
                return problems
            syn.set_text(text)  # an edit came in meanwhile: parse what was asked for

    def analyse(self, change: FileChange, target_abs: str, language_id: str | None) -> Analysis:
        """What is known of one touched file after the change, without a large parse."""
        if change.change == "delete":
            with self._lock:
                self._syntax.pop(target_abs, None)
            return Analysis([], [])
        language = language_for(language_id, change.target_path)
        if language is None:
            return Analysis([], [])
        syn = self.syntax(target_abs)
        typed_over = False
        edits = change.edits
        updating = change.change in ("update", "move") and change.before.exists
        before: list[SyntaxProblem] | None = [] if not updating else None
        if (
            updating
            and syn is not None
            and syn.language == language
            and syn.text_id is not None
            and syn.text_id == change.before.sha256
        ):
            before = syn.known_problems()
            if before is None and syn.size < syn.region_above:
                before = syn.problems()  # small: a whole parse costs well under a millisecond
        elif updating and len(change.before.text) < REGION_ABOVE_BYTES:
            syn = DocumentSyntax(language, change.before.text)
            before = syn.problems()
        elif updating and syn is not None and syn.language == language and syn.has_tree:
            # The user typed since (or the text came from elsewhere): what differs becomes one
            # more recorded edit, checked with the agent's in one region (a few ms of compare
            # at 100k lines, against a whole parse). Errors found then may be the user's.
            syn.set_text(change.before.text)
            typed_over = True
        else:
            syn = None
        if syn is not None and edits and change.new_text_override is None:
            syn.apply_line_edits(None if syn.lines_are_rows else change.before.lines, edits)
        elif syn is not None:
            syn.set_text(change.new_text)
        else:
            syn = DocumentSyntax(language, change.new_text)
        syn.text_id = change.new_sha256
        self._remember(target_abs, syn)
        check = syn.check()
        if check.status == "exact":
            after = list(check.problems)
            if before is None:  # what the file had before is not known: blame nothing
                return Analysis(after, [])
            return Analysis(after, introduced_errors(before, after, edits))
        if check.status == "region" and not check.problems:
            return Analysis([], [])
        # Region errors of a clean file are the edit's (unless the user's typing is in the
        # region too); a whole parse will say which stay.
        return Analysis(None, [] if typed_over else list(check.problems))

    # -- publishing (event loop) -----------------------------------------------------------

    def publish(
        self, server: Any, uri: str, problems: list[SyntaxProblem], version: int | None
    ) -> None:
        self._published_version[uri] = version
        if not problems and uri not in self._with_errors:
            return  # the editor shows no errors of ours for it already: nothing to clear
        encoding = _encoding(server)
        diagnostics = [to_lsp_diagnostic(p, encoding) for p in problems]
        server.text_document_publish_diagnostics(
            t.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )
        if problems:
            self._with_errors.add(uri)
        else:
            self._with_errors.discard(uri)

    def has_published_errors(self, uri: str) -> bool:
        return uri in self._with_errors

    def parse_later(self, server: Any, abs_path: str) -> None:
        """Parse the file whole in a worker thread, then publish for the edit it reflects."""
        if abs_path in self._parsing:
            self._parse_again.add(abs_path)
            return
        task = asyncio.ensure_future(self._parse_and_publish(server, abs_path))
        self._parsing[abs_path] = task

    async def _parse_and_publish(self, server: Any, abs_path: str) -> None:
        try:
            while True:
                self._parse_again.discard(abs_path)
                syn = self.syntax(abs_path)
                if syn is None:
                    return
                problems, current = await asyncio.to_thread(syn.parse_detached)
                if current and abs_path not in self._parse_again:
                    uri, version = self._edited.get(abs_path, (None, None))
                    doc = server.store.by_path(abs_path)
                    if uri is not None and (doc is None or doc.version == version):
                        self.publish(server, uri, problems, version)
                        if _refresh_supported(server):
                            server.workspace_diagnostic_refresh(None)
                    elif uri is not None and doc is not None:
                        document_changed(server, uri, force=True)  # typed meanwhile
                    return
        except Exception:  # diagnostics must never break the server
            log.exception("whole-file syntax check failed")
        finally:
            self._parsing.pop(abs_path, None)


def to_lsp_diagnostic(problem: SyntaxProblem, encoding: str = "utf-16") -> t.Diagnostic:
    (sl, sc), (el, ec) = problem.lsp_range(encoding)
    return t.Diagnostic(
        range=t.Range(
            start=t.Position(line=sl, character=sc), end=t.Position(line=el, character=ec)
        ),
        message=problem.message,
        severity=t.DiagnosticSeverity.Error,
        source=SOURCE,
        code=f"syntax/{problem.kind}",
    )


def _encoding(server: Any) -> str:
    enc = getattr(server, "encoding", None)
    return str(enc) if enc else "utf-16"


def state(server: Any) -> SyntaxDiagnostics:
    """The server's `SyntaxDiagnostics`, created on first use."""
    found = getattr(server, "_agent_edit_syntax", None)
    if found is None:
        found = SyntaxDiagnostics()
        server._agent_edit_syntax = found
    return found


def _refresh_supported(server: Any) -> bool:
    try:
        caps = server.client_capabilities
    except Exception:  # no session yet: nothing to refresh
        return False
    ws = getattr(caps, "workspace", None)
    diag = getattr(ws, "diagnostics", None) if ws is not None else None
    return bool(getattr(diag, "refresh_support", False))


def _language_id(server: Any, abs_path: str) -> str | None:
    store = getattr(server, "store", None)
    doc = store.by_path(abs_path) if store is not None else None
    return doc.language_id if doc is not None else None


async def publish_after_edit(
    server: Any,
    changes: list[FileChange],
    locations: Mapping[str, _Location],
    versions: Mapping[str, int | None],
) -> Introduced:
    """THE hook: after a verified edit, publish each touched file's syntax errors and return the
    ones the edit introduced, for the result's `diagnostics`.

    `locations` maps every plan path (and move target) to its `abs_path` and `uri`; `versions`
    maps target paths to the document versions after the edit (absent or None if not open).
    A file whose whole check cannot be made cheaply (a large file that was broken, an edit the
    region check cannot bound, errors in the edited region) is listed in `.pending`: it is
    parsed whole in a worker thread and published when done; its entries in the list are the
    errors the edited region showed. Never raises: a failure costs only the diagnostics.
    """
    st = state(server)
    out = Introduced()
    try:
        for c in changes:
            loc = locations[c.target_path]
            analysis = st.analyse(c, loc.abs_path, _language_id(server, loc.abs_path))
            if c.change == "move":
                st.publish(server, locations[c.path].uri, [], None)
            version = versions.get(c.target_path)
            st._edited[loc.abs_path] = (loc.uri, version)
            if analysis.after is None:
                out.pending.append(c.target_path)
                st.parse_later(server, loc.abs_path)
            else:
                st.publish(server, loc.uri, analysis.after, version)
            out.extend({"path": c.target_path, **p.to_result()} for p in analysis.introduced)
        if _refresh_supported(server):
            server.workspace_diagnostic_refresh(None)
    except Exception:  # diagnostics must never turn a verified edit into a failure
        log.exception("syntax diagnostics after an edit failed")
    return out


def document_opened(server: Any, uri: str) -> None:
    """didOpen hook: parse a large document ahead of the first edit, in a worker thread.

    Region checks after an edit need the document's tree; parsing it reads the text in chunks,
    so the event loop keeps answering meanwhile. Small documents parse when an edit needs it.
    """
    doc = server.store.get(uri)
    if doc is None:
        return
    language = language_for(doc.language_id, doc.path)
    if language is None:
        return
    text = doc.text
    if len(text) < REGION_ABOVE_BYTES:
        return
    st = state(server)
    path = doc.path

    def warm() -> DocumentSyntax:
        syn = DocumentSyntax(language, text)
        syn.text_id = sha256_text(text)
        syn.parse_detached()
        return syn

    async def run() -> None:
        try:
            syn = await asyncio.to_thread(warm)
        except Exception:
            log.exception("parsing %s on open failed", path)
            return
        if st.syntax(path) is None:  # an edit meanwhile brought its own
            st._remember(path, syn)

    # Not at once: the request that follows an open (an agent reads the file it opened) is
    # answered before a worker thread starts competing for the interpreter.
    asyncio.get_running_loop().call_later(WARM_DELAY_S, lambda: _spawn(run()))


def document_changed(server: Any, uri: str, force: bool = False) -> None:
    """didChange hook: re-publish, once typing pauses, a document showing our errors (or any
    document, `force`: a whole check finished for a text the user has typed over since)."""
    st = state(server)
    if not force and not st.has_published_errors(uri):
        return
    old = st._pending.pop(uri, None)
    if old is not None:
        old.cancel()
    st._pending[uri] = asyncio.ensure_future(_republish_later(server, st, uri))


async def _republish_later(server: Any, st: SyntaxDiagnostics, uri: str) -> None:
    try:
        await asyncio.sleep(DEBOUNCE_S)
        doc = server.store.get(uri)
        if doc is None or st._published_version.get(uri, -1) == doc.version:
            return  # closed, or this very version was published (the agent's own edit)
        language = language_for(doc.language_id, doc.path)
        version, text = doc.version, doc.text
        problems = (
            []
            if language is None
            else await asyncio.to_thread(st.problems_of, doc.path, language, text)
        )
        current = server.store.get(uri)
        if current is not None and current.version == version:
            st.publish(server, uri, problems, version)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("re-publishing syntax diagnostics failed")
    finally:
        if st._pending.get(uri) is asyncio.current_task():
            del st._pending[uri]


_background: set[asyncio.Future[Any]] = set()


def _spawn(coro: Any) -> None:
    fut = asyncio.ensure_future(coro)
    _background.add(fut)
    fut.add_done_callback(_background.discard)
