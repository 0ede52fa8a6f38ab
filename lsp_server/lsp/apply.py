"""Carrying out a plan in the editor: one WorkspaceEdit through workspace/applyEdit, then verified.

Editors' answers cannot be trusted (editors.md): Neovim skips a stale edit and answers
`applied: true`, VS Code answers `applied: false` without a reason, eglot answers with a JSON-RPC
error. So every touched file is checked afterwards against the content the plan promises, from the
didChange/didOpen the edit produces (or the disk, for files the editor did not open). Only that
check makes an edit `applied`.

Why this module is over 500 lines (~630): building the versioned WorkspaceEdit, the
verifier that watches didChange/didOpen, and reading the editor's answer are one protocol
exchange with one set of per-file states (`FileState`); the outcome and failure wording
(`_refused`, `_unverified`, `_failure`) could move to a module of its own next.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types as t
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path

from lsp_server.engine import errors
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import EditedLines, FileChange, LineEdit
from lsp_server.engine.text import HashMark, decode_file, hash_with_marks
from lsp_server.lsp.documents import ChangeWatch, Document, DocumentStore
from lsp_server.lsp.positions import to_column

# How often files the editor has not opened are looked at on disk while verifying.
DISK_POLL_S = 0.05


def _range(lines: list[str], edit: LineEdit, encoding: str) -> t.Range:
    last = len(lines) - 1
    start = t.Position(line=edit.start, character=0)
    if edit.end <= last:
        end = t.Position(line=edit.end, character=0)
    else:
        end = t.Position(line=last, character=to_column(lines[last], len(lines[last]), encoding))
    return t.Range(start=start, end=end)


def _text_edits(
    change: FileChange, encoding: str
) -> list[t.TextEdit | t.AnnotatedTextEdit | t.SnippetTextEdit]:
    lines = change.before.lines
    return [
        t.TextEdit(range=_range(lines, e, encoding), new_text="".join(e.new_lines))
        for e in change.edits
    ]


def uri_of(abs_path: str) -> str:
    return from_fs_path(abs_path) or abs_path


@dataclass(frozen=True)
class Location:
    """Where a plan path lives: its real absolute path (store and disk key) and the URI to send."""

    abs_path: str
    uri: str


def _version_guard(uri: str, version: int) -> t.TextDocumentEdit:
    """An empty edit carrying the buffer's version, before a delete or rename of an open file.

    Resource operations have no version of their own, so without it an editor could delete or
    rename a buffer the user has changed since the plan; editors refuse a stale versioned edit.
    """
    return t.TextDocumentEdit(
        text_document=t.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
        edits=[],
    )


DocumentChange = t.TextDocumentEdit | t.CreateFile | t.RenameFile | t.DeleteFile


def to_workspace_edit(
    changes: list[FileChange], where: dict[str, Location], encoding: str
) -> t.WorkspaceEdit:
    """One WorkspaceEdit for the plan, with versioned TextDocumentEdits for open documents.

    `where` locates each plan path (and move target). Versions
    come from the snapshots the plan was computed on; null only for files the editor has not open.
    Sent as `documentChanges` even to clients that do not advertise it (Neovim applies them).
    """
    out: list[DocumentChange] = []
    for c in changes:
        uri = where[c.path].uri
        version = c.before.version if c.before.source == "buffer" else None
        if c.change == "add":
            out.append(
                t.CreateFile(
                    uri=uri, options=t.CreateFileOptions(overwrite=False, ignore_if_exists=False)
                )
            )
            if c.new_text:
                edit = t.TextEdit(
                    range=t.Range(
                        start=t.Position(line=0, character=0), end=t.Position(line=0, character=0)
                    ),
                    new_text=c.new_text,
                )
                out.append(
                    t.TextDocumentEdit(
                        text_document=t.OptionalVersionedTextDocumentIdentifier(
                            uri=uri, version=None
                        ),
                        edits=[edit],
                    )
                )
        elif c.change == "delete":
            if version is not None:
                out.append(_version_guard(uri, version))
            out.append(
                t.DeleteFile(
                    uri=uri,
                    options=t.DeleteFileOptions(recursive=False, ignore_if_not_exists=False),
                )
            )
        elif c.change == "move":
            new_uri = where[c.target_path].uri
            if version is not None:
                out.append(_version_guard(uri, version))
            out.append(
                t.RenameFile(
                    old_uri=uri,
                    new_uri=new_uri,
                    options=t.RenameFileOptions(overwrite=False, ignore_if_exists=False),
                )
            )
            if c.edits:
                # After a rename the document's version is the editor's business: no version check.
                out.append(
                    t.TextDocumentEdit(
                        text_document=t.OptionalVersionedTextDocumentIdentifier(
                            uri=new_uri, version=None
                        ),
                        edits=_text_edits(c, encoding),
                    )
                )
        elif c.edits:
            out.append(
                t.TextDocumentEdit(
                    text_document=t.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=version
                    ),
                    edits=_text_edits(c, encoding),
                )
            )
    return t.WorkspaceEdit(document_changes=out)


FileState = str  # "new" | "old" | "other"


@dataclass
class Verifier:
    """Pending expectations, re-checked whenever a document opens, changes or closes."""

    store: DocumentStore
    _waiters: list[tuple[Callable[[], bool], asyncio.Future[None]]] = field(default_factory=list)
    # Called at every report, with the real path it concerns (None: any), before the waiters:
    # an edit in flight latches what it shows.
    _watchers: list[Callable[[str | None], None]] = field(default_factory=list)
    # Whether this editor may show an edit only after answering applyEdit (eglot's idle timer,
    # Neovim's debounce): then a buffer that does not show an edit yet proves nothing. Set from
    # the client's name at initialize (`reports_late_by_name`), and for good once it is seen.
    reports_late: bool = True

    def watch(self, look: Callable[[str | None], None]) -> Callable[[], None]:
        """Call `look` at every report (didOpen, didChange, didClose), with the real path of
        the document reported, until the returned function is called."""
        self._watchers.append(look)
        return lambda: self._watchers.remove(look)

    def notify(self, path: str | None = None) -> None:
        """A report of the document at real path `path` (None: of any or no document)."""
        for look in list(self._watchers):
            look(path)
        if not self._waiters:
            return
        still = []
        for check, fut in self._waiters:
            if fut.done():
                continue
            if check():
                fut.set_result(None)
            else:
                still.append((check, fut))
        self._waiters = still

    async def wait(self, check: Callable[[], bool], timeout_s: float, poll: bool) -> bool:
        if check():
            return True
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._waiters.append((check, fut))
        deadline = loop.time() + timeout_s
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return check()
                try:
                    await asyncio.wait_for(asyncio.shield(fut), DISK_POLL_S if poll else remaining)
                    return True
                except TimeoutError:
                    if poll and check():
                        return True
        finally:
            if not fut.done():
                fut.cancel()


@dataclass
class LineCheck:
    """Verifies an update of an open document from the lines that changed: O(edit), not O(file).

    Valid when the editor applied the edits as sent (the usual case): the document's watch then
    shows exactly the plan's edit runs, and every other line is untouched by construction. Any
    other shape answers None, and the caller compares whole texts instead.
    """

    doc: Document
    watch: ChangeWatch
    runs: list[tuple[int, int, int, list[str]]]  # orig start, orig end, new start, new lines
    expected_len: int

    @classmethod
    def start(cls, doc: Document, change: FileChange) -> LineCheck:
        runs: list[tuple[int, int, int, list[str]]] = []
        delta = 0
        for e in change.edits:
            if runs and runs[-1][1] == e.start:
                s0, _e0, n0, lines0 = runs[-1]
                runs[-1] = (s0, e.end, n0, lines0 + list(e.new_lines))
            else:
                runs.append((e.start, e.end, e.start + delta, list(e.new_lines)))
            delta += len(e.new_lines) - (e.end - e.start)
        expected = len(EditedLines(change.before.lines, change.edits))
        return cls(doc, doc.watch(), runs, expected)

    def result(self) -> bool | None:
        if self.watch.whole or not self.runs:
            # No runs: the plan changes nothing in this document (a file rewritten with its own
            # text, a `-x`/`+x` chunk) and no edit is sent for it; the whole text decides.
            return None
        if len(self.doc.lines) != self.expected_len or not self.watch.ranges:
            return False
        if len(self.watch.ranges) != len(self.runs):
            return None
        for (cs, ce, os_, oe), (rs, re_, ns, new) in zip(self.watch.ranges, self.runs, strict=True):
            if (os_, oe, cs, ce - cs) != (rs, re_, ns, len(new)):
                return None
            if self.doc.lines[cs:ce] != new:
                return False
        return True

    def stop(self) -> None:
        self.doc.unwatch(self.watch)


def file_state(
    change: FileChange, where: dict[str, Location], store: DocumentStore
) -> dict[str, FileState]:
    """Per touched path: does the editor (or disk) show the new content, the old, or neither?"""
    result: dict[str, FileState] = {}
    src = where[change.path].abs_path
    dst = where[change.target_path].abs_path
    if change.change == "delete":
        result[change.path] = (
            "new"
            if not _exists(src, store)
            else ("old" if _shows(src, change.before.text, store) else "other")
        )
        return result
    if change.change == "move":
        result[change.path] = "new" if not _exists(src, store) else "old"
    if change.change == "add" and not _exists(dst, store):
        result[change.target_path] = "old"
        return result
    if _exists(dst, store) and _shows(dst, change.new_text, store):
        result[change.target_path] = "new"
    elif change.change == "update" and _shows(dst, change.before.text, store):
        result[change.target_path] = "old"
    elif change.change == "move" and not _exists(dst, store):
        result[change.target_path] = "old"
    else:
        result[change.target_path] = "other"
    return result


def _is_new(
    change: FileChange, where: dict[str, Location], store: DocumentStore, fast: LineCheck | None
) -> bool:
    src = where[change.path].abs_path
    dst = where[change.target_path].abs_path
    if change.change == "delete":
        return not _exists(src, store)
    if change.change == "move" and _exists(src, store):
        return False
    if fast is not None and store.by_path(dst) is fast.doc:
        verdict = fast.result()
        if verdict is not None:
            return verdict
    return _exists(dst, store) and _shows(dst, change.new_text, store)


def _exists(abs_path: str, store: DocumentStore) -> bool:
    return store.by_path(abs_path) is not None or os.path.lexists(abs_path)


def _shows(abs_path: str, text: str, store: DocumentStore) -> bool:
    doc = store.by_path(abs_path)
    if doc is not None:
        return doc.text == text
    try:
        with open(abs_path, "rb") as f:
            data = f.read()
        disk = decode_file(abs_path, data, max_bytes=1 << 62)
    except (OSError, EditError):
        return False
    return disk.text == text


@dataclass(frozen=True)
class Shown:
    """The document state that first showed an edit: its version, and which open and which
    report of that open it was. The version alone does not name it: a client may send a change
    without a higher version, or close and reopen the file, and count from there again."""

    version: int
    open_id: int
    reports: int

    @classmethod
    def of(cls, doc: Document) -> Shown:
        return cls(doc.version, doc.open_id, doc.reports)

    def still(self, doc: Document | None) -> bool:
        """Whether `doc` is still in this state (no report of it since)."""
        return doc is not None and (doc.open_id, doc.reports) == (self.open_id, self.reports)


@dataclass
class Outcome:
    states: dict[str, FileState]
    error: EditError | None = None
    # Paths the editor may have changed but has not shown (UNVERIFIED): the entry stays pending.
    unconfirmed: list[str] = field(default_factory=list)
    # After a TIMEOUT: the editor's answer, which may still come (the edit may still land).
    late_answer: asyncio.Future[Any] | None = None
    # Target path -> the document state that first showed the edit (None: not open then).
    shown: dict[str, Shown | None] = field(default_factory=dict)


Mark = tuple[int, int] | None


def report_mark(abs_path: str, store: DocumentStore) -> Mark:
    """Where the editor's reports of a file stand now: (open, didChange count), None if closed."""
    doc = store.by_path(abs_path)
    return None if doc is None else (doc.open_id, doc.reports)


# Clients known to send the didChange of an applied edit before their applyEdit answer.
_PROMPT_CLIENTS = ("visual studio code", "code - oss", "vscodium", "code-server")


def reports_late_by_name(client_name: str | None) -> bool:
    """Unless the client is known to report its edits before answering, assume it may not."""
    name = (client_name or "").lower()
    return not any(known in name for known in _PROMPT_CLIENTS)


def transactional(capabilities: Any, changes: list[FileChange]) -> bool:
    """Whether a refusal by this client means none of `changes` was applied.

    Only `transactional` clients promise that for any edit, `textOnlyTransactional` ones (VS
    Code) for edits without resource operations; and an edit of one file is refused whole.
    Others (eglot, Neovim) apply file by file and stop at the first they refuse.
    """
    if len(changes) == 1 and changes[0].change == "update":
        return True
    ws = getattr(capabilities, "workspace", None)
    we = getattr(ws, "workspace_edit", None)
    kind = getattr(we, "failure_handling", None)
    kind = getattr(kind, "value", kind)
    if kind == "transactional":
        return True
    return kind == "textOnlyTransactional" and all(c.change == "update" for c in changes)


def refusal_applies_nothing(capabilities: Any) -> bool:
    """Whether the client vouches that its `applied: false` means it applied nothing, for any
    edit (`experimental.agentEdit.refusalAppliesNothing`, PROTOCOL.md): the Neovim plugin checks
    every version (and rename) before it applies anything, and answers an apply that failed
    part-way with a JSON-RPC error instead. An error answer is never taken as such a refusal."""
    experimental = getattr(capabilities, "experimental", None)
    if not isinstance(experimental, dict):
        return False
    ours = experimental.get("agentEdit")
    return isinstance(ours, dict) and ours.get("refusalAppliesNothing") is True


async def apply_and_verify(
    server: Any,
    changes: list[FileChange],
    where: dict[str, Location],
    store: DocumentStore,
    verifier: Verifier,
    encoding: str,
    label: str,
    apply_timeout_s: float,
    verify_timeout_s: float,
    all_or_nothing: bool = True,
    refusal_whole: bool = False,
) -> Outcome:
    """Send the plan as one WorkspaceEdit and find out what really happened.

    `all_or_nothing`: a refusal by this client means nothing was applied (`transactional`).
    `refusal_whole`: an `applied: false` answer (not an error) means that too
    (`refusal_applies_nothing`).
    """
    edit = to_workspace_edit(changes, where, encoding)

    # Open documents being updated are checked line by line from a watch on their changes.
    fast: list[LineCheck | None] = []
    for c in changes:
        doc = store.by_path(where[c.path].abs_path)
        ok = c.change == "update" and doc is not None and c.before.source == "buffer"
        fast.append(LineCheck.start(doc, c) if ok and doc is not None else None)

    # Each file's first showing of the edit is latched, with its version, at the report that
    # made it (`look`, from the moment the edit is sent): the user may type right after the
    # edit shows, before the editor answers or before this coroutine looks again. The edit
    # landed all the same; it was reported PARTIAL ("do not resend"), and a multi-file edit
    # was half rolled back (tests/lsp/test_lsp_typing_right_after_the_edit.py).
    shown: dict[int, Shown | None] = {}

    # A report concerns only the changes of its document: looking at every change at every
    # report made a 1,000-file edit O(files x reports) (3x slower with VS Code).
    concern: dict[str, list[int]] = {}
    for i, c in enumerate(changes):
        for p in dict.fromkeys((where[c.path].abs_path, where[c.target_path].abs_path)):
            concern.setdefault(p, []).append(i)

    def look(path: str | None = None) -> None:
        """Latch what shows now: of the changes that concern `path` (None: of all)."""
        for i in range(len(changes)) if path is None else concern.get(path, ()):
            if i in shown:
                continue
            c = changes[i]
            if _is_new(c, where, store, fast[i]):
                doc = store.by_path(where[c.target_path].abs_path)
                shown[i] = Shown.of(doc) if doc is not None else None

    def states(latched: bool = True) -> dict[str, FileState]:
        """Per path: "new", "old" or "other"; `latched`: a file that showed the edit is "new"
        whatever it shows now. Not after a refusal: a client that applied part of the edit
        and undid it before refusing (the Emacs package) left the files as they were, and the
        latch would make that PARTIAL."""
        out: dict[str, FileState] = {}
        for i, c in enumerate(changes):
            now = file_state(c, where, store)
            out.update(dict.fromkeys(now, "new") if latched and i in shown else now)
        return out

    def all_new() -> bool:
        # Runs on every didChange while waiting: look only for the promised content.
        look()
        return len(shown) == len(changes)

    # Files the editor has not open may be changed on disk (or opened later): poll for those.
    poll = any(store.by_path(where[c.target_path].abs_path) is None for c in changes)
    # Everything that needs the snapshots' lent line lists happens before the editor is asked.
    for c in changes:
        if c.change != "update":
            c.new_lines  # noqa: B018 - computed now, while the old lines are still valid
        c.before.release_lines()
    unwatch = verifier.watch(look)
    try:
        request = server.protocol.send_request(
            "workspace/applyEdit", t.ApplyWorkspaceEditParams(edit=edit, label=label)
        )
        # While the editor works (another process), hash the new contents on a thread:
        # hashlib releases the GIL, and the result needs every file's sha256.
        # An open buffer's hash resumes from its state just before the first edit.
        loop = asyncio.get_running_loop()
        hashes = []
        for c in changes:
            if c.change == "delete":
                continue
            start, state = 0, None
            doc = store.by_path(where[c.path].abs_path)
            if c.change == "update" and doc is not None and c.edits and c.edits[0].offsets:
                start, state = doc.hash_start(c.edits[0].offsets[0])
            hashes.append(loop.run_in_executor(None, hash_with_marks, c.new_text, start, state))
        outcome = await _await_outcome(
            request,
            hashes,
            changes,
            states,
            lambda: states(latched=False),
            all_new,
            verifier,
            apply_timeout_s,
            verify_timeout_s,
            poll,
            all_or_nothing,
            refusal_whole,
        )
        outcome.shown = {changes[i].target_path: v for i, v in shown.items()}
        return outcome
    finally:
        unwatch()
        for f in fast:
            if f is not None:
                f.stop()


async def _await_outcome(
    request: Any,
    hashes: list[asyncio.Future[tuple[str, list[HashMark]]]],
    changes: list[FileChange],
    states: Callable[[], dict[str, FileState]],
    refused_states: Callable[[], dict[str, FileState]],
    all_new: Callable[[], bool],
    verifier: Verifier,
    apply_timeout_s: float,
    verify_timeout_s: float,
    poll: bool,
    all_or_nothing: bool,
    refusal_whole: bool,
) -> Outcome:
    # Shielded: on a timeout the request stays open, since the editor may still apply the edit.
    answer_future = asyncio.wrap_future(request)
    try:
        answer = await asyncio.wait_for(asyncio.shield(answer_future), apply_timeout_s)
    except TimeoutError:
        st = states()
        if not all(v == "new" for v in st.values()):
            error = _failure(
                Code.TIMEOUT,
                f"The editor did not answer workspace/applyEdit within {apply_timeout_s:g} s.",
                st,
                ours=False,
            )
            if any(v == "new" for v in st.values()):
                # Part of it shows: judged now. The answer may still come (the rollback of a
                # partial edit waits for it: EditorAttempt._roll_back).
                return Outcome(st, error, late_answer=answer_future)
            # Not refused either (typing alone is no refusal): it may still land. The entry
            # stays pending until the editor answers or shows the files (lsp/pending.py), and
            # "not-applied" is not claimed.
            error.hint = (
                "The editor may still apply it: the edit stays pending in agentEdit.history and "
                "is settled (agentEdit/historyChanged) when the editor answers or shows the "
                "files. Read them again after that, before any new edit of them."
            )
            for f in error.details["files"]:
                if f["state"] == "not-applied":
                    f["state"] = "unconfirmed"
            unconfirmed = [p for p, v in st.items() if v == "old"]
            error.details["unconfirmed"] = unconfirmed
            return Outcome(st, error, unconfirmed, late_answer=answer_future)
        # Silent, but every file shows the edit: verification, not the answer, decides.
        answer = t.ApplyWorkspaceEditResult(applied=True)
    except JsonRpcException as exc:
        message = f"The editor refused the edit with an error: {exc}"
        return await _refused(
            message, refused_states, verifier, verify_timeout_s, poll, all_or_nothing
        )
    if not answer.applied:
        reason = answer.failure_reason or "no reason given"
        message = f"The editor refused the edit ({reason})."
        # A client that refuses before applying anything: the files show the user's typing
        # alone, and waiting for a late report of an edit that was never applied proves nothing.
        # So does a refusal naming the first change as the one that failed (`failedChange: 0`,
        # PROTOCOL.md): under every failure handling LSP defines, nothing came before it and
        # it did not apply (the VS Code extension's refusal of a delete of a dirty document).
        whole = all_or_nothing or refusal_whole or answer.failed_change == 0
        return await _refused(message, refused_states, verifier, verify_timeout_s, poll, whole)
    shown_at_answer = all_new()
    if shown_at_answer or await verifier.wait(all_new, verify_timeout_s, poll):
        if not shown_at_answer:
            verifier.reports_late = True
        for c, h in zip([c for c in changes if c.change != "delete"], hashes, strict=True):
            c.digest.sha256, c.digest.marks = await h
        landed = {c.target_path: "new" for c in changes}
        landed.update({c.path: "new" for c in changes})
        return Outcome(landed)
    st = states()
    if (
        verifier.reports_late
        and any(v == "old" for v in st.values())
        and not any(v == "other" for v in st.values())
    ):
        # It said applied and has not shown otherwise: a late didChange (eglot sends it from an
        # idle timer) or a skipped edit (Neovim) look alike until the buffers report.
        return _unverified(
            "The editor answered that it applied the edit, but has not shown it in time "
            f"({verify_timeout_s:g} s).",
            st,
        )
    return Outcome(
        st,
        _failure(
            Code.NOT_APPLIED,
            "The editor answered that it applied the edit, but its buffers do not show it.",
            st,
        ),
    )


async def _refused(
    message: str,
    states: Callable[[], dict[str, FileState]],
    verifier: Verifier,
    verify_timeout_s: float,
    poll: bool,
    all_or_nothing: bool,
) -> Outcome:
    """A refusal. From a client that applies file by file and reports late (eglot), files before
    the refused one may have changed unseen: "nothing was changed" only once it is seen."""
    st = await _settle(states)
    if all_or_nothing:
        return Outcome(st, _failure(Code.CLIENT_REJECTED, message, st, ours=False))
    if not verifier.reports_late:
        return Outcome(st, _failure(Code.CLIENT_REJECTED, message, st))
    if any(v != "old" for v in st.values()):
        # The editor has reported what it changed: the rest did not change.
        return Outcome(st, _failure(Code.CLIENT_REJECTED, message, st))
    await verifier.wait(lambda: any(v != "old" for v in states().values()), verify_timeout_s, poll)
    st = states()
    if any(v != "old" for v in st.values()):
        return Outcome(st, _failure(Code.CLIENT_REJECTED, message, st))
    return _unverified(
        f"{message} This editor applies files one by one and reports changes late, and it has "
        "not shown any file since, so some may have changed.",
        st,
    )


def _unverified(message: str, st: dict[str, FileState]) -> Outcome:
    unconfirmed = [p for p, v in st.items() if v == "old"]
    files = [
        {"path": p, "state": "applied" if v == "new" else "unconfirmed"} for p, v in st.items()
    ]
    error = errors.unverified(
        f"{message} Unconfirmed: {', '.join(unconfirmed)}.",
        "Do not assume either way: the edit stays pending in agentEdit.history and is settled "
        "(agentEdit/historyChanged) when the editor shows these files. Read them again "
        "(agentEdit.read) before any new edit of them.",
        files=files,
        unconfirmed=unconfirmed,
        committed=[f for f in files if f["state"] == "applied"],
    )
    return Outcome(st, error, unconfirmed)


async def _settle(states: Callable[[], dict[str, FileState]]) -> dict[str, FileState]:
    # Let any didChange already in flight arrive before judging what the editor did.
    await asyncio.sleep(0)
    return states()


def _failure(
    code: Code, message: str, states: dict[str, FileState], ours: bool = True
) -> EditError:
    """The error for an edit that did not fully land. `ours`: a file showing neither the old nor
    the new text may hold some of this edit (false only after a transactional refusal, where
    it is the user's typing alone)."""
    landed = [p for p, s in states.items() if s == "new"]
    differ = [p for p, s in states.items() if s != "new"]
    otherwise = [p for p, s in states.items() if s == "other"]
    files = [
        {
            "path": p,
            "state": {"new": "applied", "old": "not-applied", "other": "changed-otherwise"}[s],
        }
        for p, s in states.items()
    ]
    if otherwise and ours:
        # Neither the old nor the new text: typed into meanwhile, or the edit landed elsewhere
        # (eglot applies a "versioned" edit over typing it has not sent). Never "nothing".
        return errors.partial(
            f"{message} {', '.join(otherwise)} show(s) neither the old nor the new text (changed "
            f"otherwise); seen applied: {', '.join(landed) or 'none'}.",
            "Read the files listed in details.files (agentEdit.read) and fix them by hand, or "
            "undo the edit with agentEdit.undo {editId} (it refuses with CONFLICT, showing the "
            "lines, where the text has moved on); do not resend the whole edit.",
            files=files,
            committed=[f for f in files if f["state"] == "applied"],
        )
    if landed:
        return errors.partial(
            f"{message} Part of it landed: {', '.join(landed)}; not: {', '.join(differ)}.",
            "Inspect the files listed in details.files (agentEdit.read), then fix or undo them; "
            "do not resend the whole edit.",
            files=files,
            committed=[f for f in files if f["state"] == "applied"],
        )
    hints = {
        # The editor's reason is in the message: a buffer typed into, a read-only buffer, one
        # closed meanwhile; a guess ("the file probably changed") sent agents re-reading an
        # unchanged read-only file and retrying (tests/lsp/test_lsp_refusal_hint.py).
        Code.CLIENT_REJECTED: "Nothing was changed. The editor's reason is in the message: if "
        "the file changed there, read it again and recompute the edit; if the editor cannot "
        "change it (a read-only buffer), ask the user, since retrying will not help.",
        Code.NOT_APPLIED: "Nothing was changed. The editor likely skipped it because the buffer "
        "changed: read the file again and recompute the edit.",
        Code.TIMEOUT: "Check details.files for what the editor shows now; read the files again "
        "before any new edit.",
    }
    hint = hints.get(code, "")
    if any(s == "other" for s in states.values()):
        hint = (
            "Some files show neither the old nor the new content (details.files: "
            "changed-otherwise), probably typed into meanwhile: read them again before any edit."
        )
    make = {
        Code.CLIENT_REJECTED: errors.client_rejected,
        Code.NOT_APPLIED: errors.not_applied,
        Code.TIMEOUT: errors.timeout,
    }[code]
    return make(message, hint, files=files, committed=[f for f in files if f["state"] == "applied"])
