"""An editor-like LSP test client: a document store, an applyEdit handler, didOpen/didChange.

It models how real editors answer a stale versioned edit (editors.md): VS Code answers
`applied: false`; Neovim checks only the first TextDocumentEdit, skips it silently and answers
`applied: true`; Emacs/eglot answers with a JSON-RPC error. Positions are converted here with an
implementation independent of the server's, so a conversion bug on either side shows up.

Fault injection for tests: `reject_all`, `never_answer`, `defer_changes` (eglot: didChange
notifications wait, and the version stays, until `flush()` or the next command).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types as t
from pygls.exceptions import JsonRpcInternalError
from pygls.uris import from_fs_path, to_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_server import contract
from tests import result_schemas

REPO = Path(__file__).resolve().parents[1]
EDITORS = ["visual-studio-code", "neovim", "emacs"]
_CAPS = {"visual-studio-code": "visual-studio-code", "neovim": "neovim@0.11.0", "emacs": "emacs"}
# The clientInfo each editor sends in initialize.
_NAMES = {"visual-studio-code": "Visual Studio Code", "neovim": "Neovim", "emacs": "Eglot"}
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


# Journals (history, crash recovery) go to a throwaway state directory, never the user's.
STATE_DIR = tempfile.mkdtemp(prefix="agent-edit-test-state-")
atexit.register(shutil.rmtree, STATE_DIR, True)
# Servers announce themselves (lsp_server/discovery.py) in a throwaway runtime folder too; the CLI
# and `agent-edit mcp` started by tests inherit it and find them there.
RUNTIME_DIR = tempfile.mkdtemp(prefix="agent-edit-test-run-")
atexit.register(shutil.rmtree, RUNTIME_DIR, True)
os.environ.setdefault("AGENT_EDIT_RUNTIME_DIR", RUNTIME_DIR)


def server_config() -> ClientServerConfig:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["AGENT_EDIT_STATE_DIR"] = STATE_DIR
    env.setdefault("AGENT_EDIT_RUNTIME_DIR", RUNTIME_DIR)
    return ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_server", "serve"], server_env=env
    )


def offset_of(text: str, line: int, character: int, encoding: str) -> int:
    """Offset of an LSP position in `text` (reference implementation for the tests)."""
    pos = 0
    for i, m in enumerate(_LINE.finditer(text)):
        if i == line:
            body = m.group(0).rstrip("\r\n")
            units = 0
            for j, ch in enumerate(body):
                if units >= character:
                    return pos + j
                units += (
                    len(ch.encode("utf-16-le")) // 2
                    if encoding == "utf-16"
                    else len(ch.encode("utf-8"))
                    if encoding == "utf-8"
                    else 1
                )
            return pos + len(body)
        pos = m.end()
        if m.end() == len(text):
            break
    return len(text)


class EditorRefusal(JsonRpcInternalError):
    """An error answer the modelled editor gives on purpose (eglot refuses stale edits this way)."""


@dataclass
class Doc:
    uri: str
    text: str
    version: int


class Editor:
    """The client side of a session: what the user sees, plus how this editor answers applyEdit."""

    def __init__(self, client: LanguageClient, kind: str, root: Path) -> None:
        self.client = client
        self.kind = kind
        self.root = root
        self.docs: dict[str, Doc] = {}
        self.encoding = "utf-16"
        self.reject_all = False
        self.reject_reason = "rejected by test"  # the failureReason of `reject_all`'s refusals
        self.never_answer = False
        # Indices of documentChanges of the next applyEdit to skip while still answering
        # applied: true (an editor that half-applies: VS Code aborts resource operations, Neovim
        # skips stale text edits). One-shot: a following rollback is applied whole.
        self.skip_changes: set[int] = set()
        # Fail at change index `fail_at` of the next applyEdit, after applying the ones before:
        # "reject" (applied: false), "error" (JSON-RPC error), "hold" (never answer until
        # `release()`), "kill" (kill the server process: it dies between applyEdit and recording
        # the outcome). One-shot too.
        self.fail_at: int | None = None
        self.fail_mode = "reject"
        self.apply_requests: list[t.ApplyWorkspaceEditParams] = []
        # eglot: changes are sent from an idle timer or before the next request, never while a
        # synchronous request waits; its version counter only moves when they are sent.
        self.defer_changes = False
        self._unsent: dict[str, list[t.TextDocumentContentChangePartial]] = {}
        # Called with each change's index before the editor applies it (the user types meanwhile).
        self.before_change: Any = None
        # (n, index): the n-th applyEdit (1 = the first) stops before its change `index` until
        # `resume()`, then applies the rest and answers (an editor busy mid-edit, answering late).
        self.stall_at: tuple[int, int] | None = None
        self.stalled = asyncio.Event()
        self._resume = asyncio.Event()
        self.stall_done = asyncio.Event()  # the stalled applyEdit finished and answered
        self._held = asyncio.Event()

        # pytest-lsp fails a test on any exception in a client handler; a deliberate error answer
        # is the editor's behaviour being modelled, not a failure.
        report = client.report_server_error

        def report_server_error(error: Exception, source: Any) -> None:
            if not isinstance(error, EditorRefusal):
                report(error, source)

        client.report_server_error = report_server_error  # type: ignore[method-assign]

        self.history_changes: list[Any] = []
        self.lens_refreshes = 0

        @client.feature("agentEdit/historyChanged")
        def history_changed(params: Any) -> None:
            self.history_changes.append(params)

        @client.feature(t.WORKSPACE_CODE_LENS_REFRESH)
        def code_lens_refresh(params: Any) -> None:
            self.lens_refreshes += 1

        @client.feature(t.WORKSPACE_APPLY_EDIT)
        async def apply_edit(params: t.ApplyWorkspaceEditParams) -> t.ApplyWorkspaceEditResult:
            return await self._apply(params)

    # -- the user's side ---------------------------------------------------------------------

    def uri(self, rel: str) -> str:
        return from_fs_path(str(self.root / rel)) or ""

    def write_file(self, rel: str, data: str | bytes) -> Path:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            p.write_bytes(data.encode("utf-8"))
        else:
            p.write_bytes(data)
        return p

    def open(self, rel: str, text: str | None = None, language_id: str = "plaintext") -> Doc:
        uri = self.uri(rel)
        if text is None:
            text = (self.root / rel).read_bytes().decode("utf-8").lstrip("\ufeff")
        doc = Doc(uri, text, 0 if self.kind == "neovim" else 1)
        self.docs[uri] = doc
        self.client.text_document_did_open(
            t.DidOpenTextDocumentParams(
                text_document=t.TextDocumentItem(
                    uri=uri, language_id=language_id, version=doc.version, text=text
                )
            )
        )
        return doc

    def text(self, rel: str) -> str:
        return self.docs[self.uri(rel)].text

    def save(self, rel: str) -> None:
        """The editor saves the buffer of `rel`: its text goes to disk (UTF-8, as it is)."""
        (self.root / rel).write_bytes(self.text(rel).encode("utf-8"))

    def view(self) -> dict[str, bytes]:
        """What the user sees for every file: the buffer if open, else the disk."""
        out = {}
        for p in sorted(self.root.rglob("*")):
            if p.is_file():
                rel = p.relative_to(self.root).as_posix()
                doc = self.docs.get(self.uri(rel))
                out[rel] = doc.text.encode() if doc is not None else p.read_bytes()
        return out

    def type(
        self, rel: str, line: int, character: int, new_text: str, end: tuple[int, int] | None = None
    ) -> None:
        """The user types `new_text` at a position (replacing up to `end`)."""
        doc = self.docs[self.uri(rel)]
        self._change(
            doc,
            [
                (
                    t.Range(
                        start=t.Position(line=line, character=character),
                        end=t.Position(
                            line=(end or (line, character))[0],
                            character=(end or (line, character))[1],
                        ),
                    ),
                    new_text,
                )
            ],
        )

    def _change(self, doc: Doc, edits: list[tuple[t.Range, str]]) -> None:
        changes = []
        for rng, new in edits:
            a = offset_of(doc.text, rng.start.line, rng.start.character, self.encoding)
            b = offset_of(doc.text, rng.end.line, rng.end.character, self.encoding)
            doc.text = doc.text[:a] + new + doc.text[b:]
            changes.append(t.TextDocumentContentChangePartial(range=rng, text=new))
        if self.defer_changes:
            self._unsent.setdefault(doc.uri, []).extend(changes)
            return
        doc.version += 1
        self.client.text_document_did_change(
            t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
                content_changes=changes,
            )
        )

    def flush(self) -> None:
        """Send the changes held back (eglot's idle timer firing), one didChange per document."""
        unsent, self._unsent = self._unsent, {}
        for uri, changes in unsent.items():
            doc = self.docs.get(uri)
            if doc is None:
                continue
            doc.version += 1
            self.client.text_document_did_change(
                t.DidChangeTextDocumentParams(
                    text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
                    content_changes=list(changes),
                )
            )

    async def command(self, name: str, *args: Any) -> Any:
        self.flush()  # eglot sends pending changes before its next request
        answer = await self.client.workspace_execute_command_async(
            t.ExecuteCommandParams(command=name, arguments=list(args))
        )
        if name.removeprefix("agentEdit.") in contract.ACTIONS and name.startswith("agentEdit."):
            result_schemas.check(name, answer)  # every answer, as the contract exports it
        return answer

    def release(self) -> None:
        self.never_answer = False
        self._held.set()

    def resume(self) -> None:
        self._resume.set()

    # -- the editor's side of workspace/applyEdit ---------------------------------------------

    def _stale(self, tde: t.TextDocumentEdit) -> bool:
        v = tde.text_document.version
        if v is None or (self.kind == "neovim" and v == 0):
            return False
        doc = self.docs.get(tde.text_document.uri)
        return doc is not None and doc.version != v

    async def _apply(self, params: t.ApplyWorkspaceEditParams) -> t.ApplyWorkspaceEditResult:
        self.apply_requests.append(params)
        if self.never_answer and self.fail_at is None:
            # Silent until the test lets go (`release()`), then a late answer.
            await self._held.wait()
            return t.ApplyWorkspaceEditResult(applied=False, failure_reason="too late")
        if self.reject_all:
            return t.ApplyWorkspaceEditResult(applied=False, failure_reason=self.reject_reason)
        changes = params.edit.document_changes or []
        tdes = [c for c in changes if isinstance(c, t.TextDocumentEdit)]
        if self.kind == "visual-studio-code" and any(self._stale(c) for c in tdes):
            return t.ApplyWorkspaceEditResult(applied=False)
        if self.kind == "emacs":
            for c in tdes:
                if self._stale(c):
                    doc = self.docs[c.text_document.uri]
                    raise EditorRefusal(
                        message=f"Edits on '{c.text_document.uri}' require version "
                        f"{c.text_document.version}, you have {doc.version}"
                    )
        first = True
        stalled = False
        skip, self.skip_changes = self.skip_changes, set()
        fail_at, self.fail_at = self.fail_at, None
        for index, c in enumerate(changes):
            if self.before_change is not None:
                self.before_change(index)
            if self.stall_at == (len(self.apply_requests), index):
                stalled = True
                self.stalled.set()
                await self._resume.wait()
            if index == fail_at:
                return await self._fail(index)
            if index in skip:
                continue
            if isinstance(c, t.TextDocumentEdit):
                if self.kind == "neovim" and first and self._stale(c):
                    first = False
                    continue  # "Buffer ... newer than edits": skipped, yet applied: true
                first = False
                doc = self.docs.get(c.text_document.uri)
                if doc is None:
                    if not Path(to_fs_path(c.text_document.uri) or "").is_file():
                        # What came before stays applied: resource operations are not undone.
                        return t.ApplyWorkspaceEditResult(
                            applied=False, failure_reason="file not found", failed_change=index
                        )
                    doc = self._load(c.text_document.uri)
                edits = sorted(
                    c.edits,
                    key=lambda e: (e.range.start.line, e.range.start.character),
                    reverse=True,
                )
                if edits:  # an empty (version-guard) edit changes nothing: no didChange
                    self._change(doc, [(e.range, e.new_text) for e in edits])
            elif isinstance(c, t.CreateFile):
                p = Path(to_fs_path(c.uri) or "")
                p.parent.mkdir(parents=True, exist_ok=True)
                p.touch()
            elif isinstance(c, t.DeleteFile):
                p = Path(to_fs_path(c.uri) or "")
                if c.uri in self.docs:
                    self._close(c.uri)
                p.unlink()
            elif isinstance(c, t.RenameFile):
                old, new = Path(to_fs_path(c.old_uri) or ""), Path(to_fs_path(c.new_uri) or "")
                new.parent.mkdir(parents=True, exist_ok=True)
                was_open = c.old_uri in self.docs
                text = self.docs[c.old_uri].text if was_open else None
                if was_open:
                    self._close(c.old_uri)
                old.rename(new)
                if was_open:
                    self.open(str(new.relative_to(self.root)), text)
        if stalled:
            self.stall_done.set()
        return t.ApplyWorkspaceEditResult(applied=True)

    async def _fail(self, index: int) -> t.ApplyWorkspaceEditResult:
        if self.fail_mode == "error":
            raise EditorRefusal(message=f"injected error at change {index}")
        if self.fail_mode == "hold":
            await self._held.wait()
        if self.fail_mode == "kill":
            server = self.client._server
            assert server is not None
            # Return at once: pygls cannot cancel a handler still running when the server exits.
            server.kill()
        return t.ApplyWorkspaceEditResult(
            applied=False, failure_reason=f"injected failure at change {index}", failed_change=index
        )

    def _load(self, uri: str) -> Doc:
        # Like VS Code: a file the edit touches is opened (didOpen from disk), then changed.
        path = Path(to_fs_path(uri) or "")
        # Files of another workspace folder keep their absolute path (root / abs == abs).
        rel = str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)
        return self.open(rel)

    def _close(self, uri: str) -> None:
        del self.docs[uri]
        self.client.text_document_did_close(
            t.DidCloseTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=uri))
        )


def capabilities(kind: str) -> t.ClientCapabilities:
    return pytest_lsp.client_capabilities(_CAPS[kind])


async def start_session(
    client: LanguageClient,
    kind: str,
    root: Path,
    encoding: str | None = None,
    options: dict[str, Any] | None = None,
    experimental: Any = None,
) -> Editor:
    caps = capabilities(kind)
    if experimental is not None:
        caps.experimental = experimental
    if encoding is not None:
        caps.general = caps.general or t.GeneralClientCapabilities()
        caps.general.position_encodings = [t.PositionEncodingKind(encoding)]
    editor = Editor(client, kind, root)
    result = await client.initialize_session(
        t.InitializeParams(
            capabilities=caps,
            client_info=t.ClientInfo(name=_NAMES[kind]),
            root_uri=from_fs_path(str(root)),
            workspace_folders=[t.WorkspaceFolder(uri=from_fs_path(str(root)) or "", name="ws")],
            initialization_options=options or {"verifyTimeoutMs": 1000},
        )
    )
    enc = result.capabilities.position_encoding
    editor.encoding = str(enc.value if hasattr(enc, "value") else enc or "utf-16")
    return editor
