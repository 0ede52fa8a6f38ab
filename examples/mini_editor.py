"""A minimal editor-like LSP client over stdio, for the demo and the benchmarks.

It holds open buffers (using agent-edit's own O(change) line store, so a 100k-line buffer costs
what an editor's would), answers `workspace/applyEdit` the way VS Code does (a stale version is
refused with `applied: false`), and sends `didChange` for what it applies, as editors do.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types as t
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from lsp_server.engine.text import split_lines
from lsp_server.lsp.documents import Document

REPO = Path(__file__).resolve().parents[1]


class MiniEditor:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.client = LanguageClient("mini-editor", "0.1")
        self.docs: dict[str, Document] = {}
        self.encoding = "utf-16"

        @self.client.feature(t.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: t.ApplyWorkspaceEditParams) -> t.ApplyWorkspaceEditResult:
            return self._apply(params)

        @self.client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: t.PublishDiagnosticsParams) -> None:
            pass

        @self.client.feature(t.WINDOW_SHOW_MESSAGE)
        def show_message(params: t.ShowMessageParams) -> None:
            pass

        @self.client.feature("agentEdit/historyChanged")
        def history_changed(params: object) -> None:
            pass

    async def start(self, state_dir: str | None = None) -> None:
        """Start the server; `state_dir` keeps its edit journal away from the user's own."""
        env = dict(os.environ)
        if state_dir is not None:
            env["AGENT_EDIT_STATE_DIR"] = state_dir
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        # AGENT_EDIT_SERVER_PREFIX lets a profiler wrap the server, e.g. "-m cProfile -o out.prof".
        prefix = os.environ.get("AGENT_EDIT_SERVER_PREFIX", "").split()
        await self.client.start_io(sys.executable, *prefix, "-m", "lsp_server", "serve", env=env)
        uri = from_fs_path(str(self.root)) or ""
        result = await self.client.initialize_async(
            t.InitializeParams(
                capabilities=t.ClientCapabilities(
                    workspace=t.WorkspaceClientCapabilities(
                        apply_edit=True,
                        workspace_edit=t.WorkspaceEditClientCapabilities(document_changes=True),
                    )
                ),
                root_uri=uri,
                workspace_folders=[t.WorkspaceFolder(uri=uri, name=self.root.name)],
            )
        )
        enc = result.capabilities.position_encoding
        self.encoding = str(getattr(enc, "value", enc) or "utf-16")
        self.client.initialized(t.InitializedParams())

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    def uri(self, rel: str) -> str:
        return from_fs_path(str(self.root / rel)) or ""

    def open(self, rel: str, language_id: str = "plaintext") -> Document:
        uri = self.uri(rel)
        text = (self.root / rel).read_text(encoding="utf-8")
        doc = Document(uri, rel, language_id, 1, split_lines(text))
        self.docs[uri] = doc
        self.client.text_document_did_open(
            t.DidOpenTextDocumentParams(
                text_document=t.TextDocumentItem(
                    uri=uri, language_id=language_id, version=1, text=text
                )
            )
        )
        return doc

    def type(self, rel: str, line: int, character: int, text: str) -> None:
        """The user types `text` at (line, character)."""
        doc = self.docs[self.uri(rel)]
        pos = t.Position(line=line, character=character)
        self._change(doc, [(t.Range(start=pos, end=pos), text)])

    def _change(self, doc: Document, edits: list[tuple[t.Range, str]]) -> None:
        changes = []
        for rng, text in edits:
            s, e = rng.start, rng.end
            doc.replace_range((s.line, s.character), (e.line, e.character), text, self.encoding)
            changes.append(t.TextDocumentContentChangePartial(range=rng, text=text))
        doc.version += 1
        self.client.text_document_did_change(
            t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
                content_changes=changes,
            )
        )

    def _apply(self, params: t.ApplyWorkspaceEditParams) -> t.ApplyWorkspaceEditResult:
        for change in params.edit.document_changes or []:
            if not isinstance(change, t.TextDocumentEdit):
                return t.ApplyWorkspaceEditResult(applied=False, failure_reason="unsupported")
            doc = self.docs.get(change.text_document.uri)
            if doc is None:
                return t.ApplyWorkspaceEditResult(applied=False, failure_reason="not open")
            if change.text_document.version not in (None, doc.version):
                return t.ApplyWorkspaceEditResult(applied=False)
        for change in params.edit.document_changes or []:
            assert isinstance(change, t.TextDocumentEdit)
            doc = self.docs[change.text_document.uri]
            edits = sorted(
                change.edits,
                key=lambda e: (e.range.start.line, e.range.start.character),
                reverse=True,
            )
            self._change(doc, [(e.range, e.new_text) for e in edits])
        return t.ApplyWorkspaceEditResult(applied=True)

    async def command(self, name: str, args: dict[str, Any]) -> Any:
        return await self.client.workspace_execute_command_async(
            t.ExecuteCommandParams(command=name, arguments=[args])
        )
