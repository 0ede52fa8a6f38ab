"""The user types right after an agent edit shows, before the editor answers the applyEdit.

The server learns of an edit's landing when its coroutine resumes after the applyEdit answer;
by then the didChange of the user's typing may have been read too. What it then recorded as
the buffer (and asked the editor to save) must be the buffer with the typing, not the edit's
text alone; and with saveAfterEdit on, a document typed in after the edit is not saved."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, start_session


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def typing_after_each_edit(ed: Editor, rel: str, typed: str) -> None:
    """The editor applies each agent edit, then the user types `typed` at the top of `rel`,
    then the editor answers (both didChanges reach the server before the answer)."""
    apply = ed._apply

    async def apply_then_type(params: t.ApplyWorkspaceEditParams) -> Any:
        answer = await apply(params)
        ed.type(rel, 0, 0, typed)
        return answer

    ed._apply = apply_then_type  # type: ignore[method-assign]


@pytest.mark.asyncio
async def test_the_buffer_the_server_keeps_has_the_typing(vscode: Editor) -> None:
    vscode.write_file("f.txt", "one\ntwo\n")
    vscode.open("f.txt")
    await vscode.command("agentEdit.read", {"path": "f.txt"})
    typing_after_each_edit(vscode, "f.txt", "typed ")
    r = await vscode.command(
        "agentEdit.replace", {"path": "f.txt", "oldText": "two", "newText": "2"}
    )
    assert r["ok"], r
    assert vscode.text("f.txt") == "typed one\n2\n"
    read = await vscode.command("agentEdit.read", {"path": "f.txt"})
    assert read["sha256"] == sha("typed one\n2\n"), read
    # And the next edit is planned on what the user sees.
    again = await vscode.command(
        "agentEdit.replace", {"path": "f.txt", "oldText": "typed one", "newText": "1"}
    )
    assert again["ok"], again


@pytest.mark.asyncio
async def test_a_document_typed_in_after_the_edit_is_not_saved(
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
    ed.write_file("u.txt", "b\n")
    ed.open("s.txt")
    ed.open("u.txt")
    await ed.command("agentEdit.read", {"path": "s.txt"})
    typing_after_each_edit(ed, "s.txt", "typed ")
    r = await ed.command("agentEdit.replace", {"path": "s.txt", "oldText": "a", "newText": "A"})
    assert r["ok"], r
    assert r["saved"] is False and r["files"][0]["saved"] is False, r
    assert all(ed.uri("s.txt") not in p.uris for p in asked), asked


@pytest.mark.asyncio
async def test_the_save_request_names_the_version_that_showed_the_edit(
    client: LanguageClient, tmp_path: Any
) -> None:
    asked: list[Any] = []

    @client.feature("agentEdit/saveDocuments")
    def save_documents(params: Any) -> Any:
        asked.append(params)
        ed.save("s.txt")  # the server looks at the disk after a save
        return {"saved": list(params.uris), "skipped": []}

    ed = await start_session(
        client, "visual-studio-code", tmp_path, options={"saveAfterEdit": True}
    )
    ed.write_file("s.txt", "a\n")
    ed.open("s.txt")
    await ed.command("agentEdit.read", {"path": "s.txt"})
    r = await ed.command("agentEdit.replace", {"path": "s.txt", "oldText": "a", "newText": "A"})
    assert r["ok"] and r["saved"] is True, r
    (params,) = asked
    assert list(params.uris) == [ed.uri("s.txt")], params
    assert list(params.versions) == [r["files"][0]["version"]], (params, r)


@pytest.mark.asyncio
async def test_the_next_edit_without_a_read_is_stale_after_that_typing(vscode: Editor) -> None:
    vscode.write_file("f.txt", "one\ntwo\n")
    vscode.open("f.txt")
    await vscode.command("agentEdit.read", {"path": "f.txt"})
    typing_after_each_edit(vscode, "f.txt", "typed ")
    r = await vscode.command(
        "agentEdit.replace", {"path": "f.txt", "oldText": "two", "newText": "2"}
    )
    assert r["ok"], r
    # The result names the edit's own text and the version that showed it, not the typing.
    assert r["files"][0]["sha256"] == sha("one\n2\n"), r
    assert r["files"][0]["version"] == vscode.docs[vscode.uri("f.txt")].version - 1, r
    vscode._apply = Editor._apply.__get__(vscode)  # no more typing
    # The agent has not seen "typed ": an edit with no `expect` leans on its last token.
    again = await vscode.command(
        "agentEdit.write", {"path": "f.txt", "text": "agent's whole file\n"}
    )
    assert again["ok"] is False and again["code"] == "STALE", again
    assert vscode.text("f.txt") == "typed one\n2\n"


@pytest.mark.asyncio
async def test_a_multi_file_edit_with_typing_in_one_file_lands_whole(vscode: Editor) -> None:
    vscode.write_file("a.txt", "a\n")
    vscode.write_file("b.txt", "b\n")
    vscode.open("a.txt")
    vscode.open("b.txt")
    typing_after_each_edit(vscode, "a.txt", "typed ")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n"
        "*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch\n"
    )
    r = await vscode.command("agentEdit.applyPatch", {"patch": patch})
    assert r["ok"] and r["status"] == "applied", r
    assert vscode.text("a.txt") == "typed A\n" and vscode.text("b.txt") == "B\n"
    assert len(vscode.apply_requests) == 1, "a rollback was sent"
    history = await vscode.command("agentEdit.history", {})
    (entry,) = [e for e in history["entries"] if e["id"] == r["editId"]]
    assert entry["outcome"] == "applied", entry
