"""The state that showed an agent edit is named by its open and report, not its version alone.

The server latches the document version that first showed an edit (apply.py) and, while the
buffer is still at it, seeds its caches with the edit's text. A version does not name one state:
a client may send a change without a higher version, or the user may close the file and open it
again, when versions count from 1 again. Then the server kept the edit's text as the buffer
(typing lost from its view), and the result's read token, tied to the new open, waved the
agent's next edit through over typing it never saw."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, start_session


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def after_each_edit(ed: Editor, then: Callable[[], None]) -> None:
    """The editor applies each agent edit, then `then` happens, then the editor answers."""
    apply = ed._apply

    async def apply_then(params: t.ApplyWorkspaceEditParams) -> Any:
        answer = await apply(params)
        then()
        return answer

    ed._apply = apply_then  # type: ignore[method-assign]


def type_without_a_higher_version(ed: Editor, rel: str, typed: str) -> None:
    """The user types `typed` at the top of `rel`; the client sends it with the same version."""
    doc = ed.docs[ed.uri(rel)]
    doc.text = typed + doc.text
    at = t.Position(line=0, character=0)
    ed.client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
            content_changes=[
                t.TextDocumentContentChangePartial(range=t.Range(start=at, end=at), text=typed)
            ],
        )
    )


def reopen(ed: Editor, rel: str) -> None:
    """The user closes `rel` without saving and opens it again (from disk, version 1)."""
    ed._close(ed.uri(rel))
    ed.open(rel)


@pytest.mark.asyncio
async def test_typing_sent_without_a_higher_version_stays_in_the_servers_buffer(
    vscode: Editor,
) -> None:
    vscode.write_file("f.txt", "one\ntwo\n")
    vscode.open("f.txt")
    await vscode.command("agentEdit.read", {"path": "f.txt"})
    after_each_edit(vscode, lambda: type_without_a_higher_version(vscode, "f.txt", "X"))
    r = await vscode.command(
        "agentEdit.replace", {"path": "f.txt", "oldText": "two", "newText": "2"}
    )
    assert r["ok"], r
    vscode._apply = Editor._apply.__get__(vscode)
    assert vscode.text("f.txt") == "Xone\n2\n"
    read = await vscode.command("agentEdit.read", {"path": "f.txt"})
    assert read["sha256"] == sha("Xone\n2\n"), read


@pytest.mark.asyncio
async def test_a_reopened_buffer_is_not_taken_for_the_edit(vscode: Editor) -> None:
    vscode.write_file("f.txt", "one\ntwo\n")
    vscode.open("f.txt")
    await vscode.command("agentEdit.read", {"path": "f.txt"})

    def reopen_and_type() -> None:
        reopen(vscode, "f.txt")
        vscode.type("f.txt", 0, 0, "X")  # version 2 again, as the edit's

    after_each_edit(vscode, reopen_and_type)
    r = await vscode.command(
        "agentEdit.replace", {"path": "f.txt", "oldText": "two", "newText": "2"}
    )
    assert r["ok"], r  # it landed (then the user threw it away)
    vscode._apply = Editor._apply.__get__(vscode)
    assert vscode.text("f.txt") == "Xone\ntwo\n"
    read = await vscode.command("agentEdit.read", {"path": "f.txt"})
    assert read["sha256"] == sha("Xone\ntwo\n"), read


@pytest.mark.asyncio
async def test_the_next_edit_after_a_reopen_and_typing_is_stale(vscode: Editor) -> None:
    vscode.write_file("f.txt", "one\ntwo\n")
    vscode.open("f.txt")
    await vscode.command("agentEdit.read", {"path": "f.txt"})
    after_each_edit(vscode, lambda: reopen(vscode, "f.txt"))
    r = await vscode.command(
        "agentEdit.replace", {"path": "f.txt", "oldText": "two", "newText": "2"}
    )
    assert r["ok"], r
    vscode._apply = Editor._apply.__get__(vscode)
    vscode.type("f.txt", 0, 0, "typed ")  # version 2 of the new open: the edit's number
    again = await vscode.command(
        "agentEdit.replace", {"path": "f.txt", "oldText": "one", "newText": "1"}
    )
    assert not again["ok"] and again["code"] == "STALE", again
    assert vscode.text("f.txt") == "typed one\ntwo\n"


@pytest.mark.asyncio
async def test_typing_without_a_higher_version_is_not_saved(
    client: LanguageClient, tmp_path: Any
) -> None:
    asked: list[Any] = []

    @client.feature("agentEdit/saveDocuments")
    def save_documents(params: Any) -> Any:
        asked.append(params)
        return {"saved": list(params.uris), "skipped": []}

    ed = await start_session(
        client, "visual-studio-code", tmp_path, options={"saveAfterEdit": True}
    )
    ed.write_file("s.txt", "a\n")
    ed.open("s.txt")
    await ed.command("agentEdit.read", {"path": "s.txt"})
    after_each_edit(ed, lambda: type_without_a_higher_version(ed, "s.txt", "typed "))
    r = await ed.command("agentEdit.replace", {"path": "s.txt", "oldText": "a", "newText": "A"})
    assert r["ok"], r
    assert r["saved"] is False and r["files"][0]["saved"] is False, r
    assert asked == [], asked
