"""Syntax diagnostics in the editor and in edit results: the LSP side of `engine/syntax.py`.

Owns, per server, one incremental `DocumentSyntax` per recently touched file (LRU-capped), and:
- publishes `textDocument/publishDiagnostics` (source `agent-edit`, with the document version) for
  every file an applied edit touched: all its current syntax errors; an empty list clears errors
  published before (also for a deleted or moved-away file), and is not sent when there is nothing
  to clear (it would cost every clean edit a notification and change nothing in the editor);
- asks the client to re-pull (`workspace/diagnostic/refresh`) when it advertises support;
- gives the edit result its `diagnostics`: the syntax errors the edit introduced, as
  `{path, line, column, endLine, endColumn, message, kind}` (1-based, columns in code points).

Hooks for the server (nothing here runs unless they are called):
- after a verified edit, in `AgentEditServer.carry_out`, just before the final `return`:
      diagnostics = await publish_after_edit(self, changes, locations, versions)
      return success(edit_id, "applied", changes, versions, diagnostics)
- optional, in didOpen: `document_opened(server, uri)` parses a large document once in a worker
  thread, so the first agent edit on it pays an incremental reparse, not a full parse.
- optional, in didChange: `document_changed(server, uri)` re-publishes a document that has
  published errors once the user stops typing (debounced), so a fix the user typed clears them.
  Documents without published errors cost nothing here: parsing stays off the keystroke path.

Parsing runs in a worker thread (`asyncio.to_thread`); tree-sitter releases the GIL while it
parses, and each `DocumentSyntax` has its own lock.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Protocol

from lsprotocol import types as t

from lsp_server.engine.model import FileChange
from lsp_server.engine.syntax import (
    DocumentSyntax,
    SyntaxProblem,
    introduced_errors,
    language_for,
)

log = logging.getLogger(__name__)

SOURCE = "agent-edit"
# Documents kept parsed; a 100k-line tree is tens of MB, so only the recently touched ones.
MAX_DOCUMENTS = 32
# Quiet time after the user's last keystroke before a document with errors is re-published.
DEBOUNCE_S = 0.4
# Below this a first parse is cheap enough to do when the first edit needs it.
WARM_PARSE_MIN_BYTES = 256 * 1024
# Below this (characters of before + after text) parsing runs on the event loop: an incremental
# reparse of a 1,000-line file takes ~0.2 ms, a hop to a worker thread more under load.
INLINE_MAX_CHARS = 256 * 1024


class _Location(Protocol):
    abs_path: str
    uri: str


class SyntaxDiagnostics:
    """One server's parsed documents and what it last published."""

    def __init__(self) -> None:
        self._syntax: OrderedDict[str, DocumentSyntax] = OrderedDict()
        # URIs whose last published list was not empty (only those need a refresh on typing).
        self._with_errors: set[str] = set()
        # The document version each URI's diagnostics were last published for.
        self._published_version: dict[str, int | None] = {}
        self._pending: dict[str, asyncio.Task[None]] = {}
        # One parse sequence at a time: bringing a parser to a text and reading its problems
        # must not interleave with another thread bringing it to another text.
        self._lock = threading.Lock()

    # -- parsing (worker thread) -----------------------------------------------------------

    def problems_of(self, abs_path: str, language: str, text: str) -> list[SyntaxProblem]:
        """The syntax problems of `text`, reparsing the file's tree incrementally."""
        with self._lock:
            return self._syntax_for(abs_path, language, text).problems()

    def _syntax_for(self, abs_path: str, language: str, text: str) -> DocumentSyntax:
        """The document's parser brought to `text` (incrementally when it knew an older text)."""
        syn = self._syntax.get(abs_path)
        if syn is None or syn.language != language:
            syn = DocumentSyntax(language, text)
            self._syntax[abs_path] = syn
        else:
            syn.set_text(text)
            self._syntax.move_to_end(abs_path)
        while len(self._syntax) > MAX_DOCUMENTS:
            self._syntax.popitem(last=False)
        return syn

    def analyse(
        self, change: FileChange, target_abs: str, language_id: str | None
    ) -> tuple[list[SyntaxProblem], list[SyntaxProblem]]:
        """(all problems after the change, the ones it introduced) for one touched file."""
        if change.change == "delete":
            with self._lock:
                self._syntax.pop(target_abs, None)
            return [], []
        language = language_for(language_id, change.target_path)
        if language is None:
            return [], []
        before: list[SyntaxProblem] = []
        if change.change in ("update", "move") and change.before.exists:
            before = self.problems_of(target_abs, language, change.before.text)
        after = self.problems_of(target_abs, language, change.new_text)
        return after, introduced_errors(before, after, change.edits)

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
) -> list[dict[str, Any]]:
    """THE hook: after a verified edit, publish each touched file's syntax errors and return the
    ones the edit introduced, for the result's `diagnostics`.

    `locations` maps every plan path (and move target) to its `abs_path` and `uri`; `versions`
    maps target paths to the document versions after the edit (absent or None if not open).
    Never raises: a failure here is logged and costs only the diagnostics.
    """
    st = state(server)
    out: list[dict[str, Any]] = []
    try:
        jobs = [
            (
                c,
                locations[c.target_path],
                _language_id(server, locations[c.target_path].abs_path),
            )
            for c in changes
        ]

        def analyse_all() -> list[tuple[list[SyntaxProblem], list[SyntaxProblem]]]:
            return [st.analyse(c, loc.abs_path, lid) for c, loc, lid in jobs]

        size = sum(len(c.before.text) + len(c.new_text or "") for c in changes)
        # Small files reparse in well under a millisecond: a thread hop would cost more.
        analysed = (
            analyse_all() if size < INLINE_MAX_CHARS else await asyncio.to_thread(analyse_all)
        )
        for (c, loc, _), (after, introduced) in zip(jobs, analysed, strict=True):
            if c.change == "move":
                st.publish(server, locations[c.path].uri, [], None)
            st.publish(server, loc.uri, after, versions.get(c.target_path))
            out.extend({"path": c.target_path, **p.to_result()} for p in introduced)
        if _refresh_supported(server):
            server.workspace_diagnostic_refresh(None)
    except Exception:  # diagnostics must never turn a verified edit into a failure
        log.exception("syntax diagnostics after an edit failed")
    return out


def document_opened(server: Any, uri: str) -> None:
    """Optional didOpen hook: parse a large document ahead of the first edit, off the loop."""
    doc = server.store.get(uri)
    if doc is None:
        return
    language = language_for(doc.language_id, doc.path)
    if language is None or sum(len(line) for line in doc.lines) < WARM_PARSE_MIN_BYTES:
        return
    st = state(server)
    text = doc.text

    def warm() -> None:
        st.problems_of(doc.path, language, text)

    _spawn(asyncio.to_thread(warm))


def document_changed(server: Any, uri: str) -> None:
    """Optional didChange hook: re-publish, once typing pauses, a document showing our errors."""
    st = state(server)
    if not st.has_published_errors(uri):
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
