"""A didChange whose version does not increase: the version no longer tells contents apart.

LSP says every didChange carries a higher version, and the server trusts a matching version as
proof that the agent saw the text (planner.check_precondition: version, else sha256). A buggy
or hostile client that sends a change at the same (or a lower) version made a read token from
before it pass on its version alone: a `write` computed from the text the agent read was sent
at that version, which the client then applies over the user's typing. Such a change now starts
a new count (as a reopen does, documents.DocumentStore.change), so a token from before it is
checked by its sha256, and the edit is STALE.
"""

from __future__ import annotations

import pytest
from lsprotocol import types as t

from tests.editor_client import Editor


def _raw_change(editor: Editor, rel: str, version: int, line: int, text: str) -> None:
    """The user types `text` at the start of `line`, sent at `version` (not increased)."""
    doc = editor.docs[editor.uri(rel)]
    lines = doc.text.split("\n")
    lines[line] = text + lines[line]
    doc.text = "\n".join(lines)
    doc.version = version
    pos = t.Position(line=line, character=0)
    editor.client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=doc.uri, version=version),
            content_changes=[
                t.TextDocumentContentChangePartial(range=t.Range(start=pos, end=pos), text=text)
            ],
        )
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("delta", [0, -1])
async def test_a_read_before_an_unversioned_change_is_stale(vscode: Editor, delta: int) -> None:
    vscode.write_file("f.txt", "a\nb\nc\n")
    vscode.open("f.txt")
    vscode.type("f.txt", 0, 0, "")  # version 2: a lower one (1) is still a valid version
    read = await vscode.command("agentEdit.read", {"path": "f.txt"})
    assert read["ok"], read
    _raw_change(vscode, "f.txt", read["version"] + delta, 1, "USER ")

    for name, args in [
        ("agentEdit.write", {"path": "f.txt", "text": "agent\n"}),
        ("agentEdit.replace", {"path": "f.txt", "oldText": "c\n", "newText": "C\n"}),
        (
            "agentEdit.replace",
            {"path": "f.txt", "oldText": "c\n", "newText": "C\n", "expect": {"version": 2}},
        ),
    ]:
        result = await vscode.command(name, args)
        assert not result["ok"] and result["code"] == "STALE", (name, args, result)
    assert vscode.text("f.txt") == "a\nUSER b\nc\n"
    assert not vscode.apply_requests  # nothing was even sent to the editor

    # A fresh read gives a token that holds again.
    read = await vscode.command("agentEdit.read", {"path": "f.txt"})
    result = await vscode.command(
        "agentEdit.replace", {"path": "f.txt", "oldText": "c\n", "newText": "C\n"}
    )
    assert result["ok"], result
    assert vscode.text("f.txt") == "a\nUSER b\nC\n"
