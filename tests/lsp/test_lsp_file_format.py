"""`agentEdit.read` of an open buffer says the line endings and BOM the file is saved with.

Editors hide a BOM from the text they send (VS Code, Neovim's 'bomb', Emacs) and Emacs shows a
CRLF file with LF; a read reported `bom: false` (and, in Emacs, `eol: lf`) for such a file, so an
agent told "LF, no BOM" wrote the wrong thing. Without the client's word the file's own BOM is
the truth; a client may declare the format (agentEdit/documentFormat) for one open of a document.
"""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from lsprotocol import types as t

from tests.editor_client import Editor


async def _read(ed: Editor, path: str) -> dict:
    result = await ed.command("agentEdit.read", {"path": path})
    assert result["ok"], result
    return result


async def _declare(ed: Editor, path: str, **fmt: object) -> None:
    ed.client.protocol.notify("agentEdit/documentFormat", {"uri": ed.uri(path), **fmt})
    await asyncio.sleep(0)  # (handled in arrival order: the next request sees it)


@pytest.mark.asyncio
async def test_an_open_bom_file_reads_with_its_bom(vscode: Editor):
    vscode.write_file("bom.txt", "\ufeffone\r\ntwo\r\n")
    vscode.open("bom.txt")  # the editor sends the text without the BOM
    got = await _read(vscode, "bom.txt")
    assert (got["source"], got["text"]) == ("buffer", "one\r\ntwo\r\n")
    assert (got["eol"], got["bom"]) == ("crlf", True)
    # `sha256sum bom.txt` (BOM included) is a token of what the buffer shows, not STALE.
    on_disk = hashlib.sha256("\ufeffone\r\ntwo\r\n".encode()).hexdigest()
    args = {"path": "bom.txt", "oldText": "two", "newText": "TWO", "expect": {"sha256": on_disk}}
    assert (await vscode.command("agentEdit.replace", args))["ok"]
    vscode.write_file("plain.txt", "one\n")
    vscode.open("plain.txt")
    assert (await _read(vscode, "plain.txt"))["bom"] is False


@pytest.mark.asyncio
async def test_a_declared_format_is_reported_for_that_open_only(vscode: Editor):
    vscode.write_file("dos.txt", "\ufeffone\r\ntwo\r\n")
    doc = vscode.open("dos.txt", text="one\ntwo\n")  # as Emacs shows it
    await _declare(vscode, "dos.txt", eol="crlf", bom=False)
    got = await _read(vscode, "dos.txt")
    # The client's word over the disk's (the user chose to save without the BOM).
    assert (got["text"], got["eol"], got["bom"]) == ("one\ntwo\n", "crlf", False)
    # Malformed values are ignored, not a crash: back to what the text and the disk say.
    await _declare(vscode, "dos.txt", eol="\r\n", bom="yes")
    got = await _read(vscode, "dos.txt")
    assert (got["eol"], got["bom"]) == ("lf", True)
    await _declare(vscode, "dos.txt", eol="cr", bom=False)
    vscode.client.text_document_did_close(
        t.DidCloseTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=doc.uri))
    )
    vscode.open("dos.txt", text="one\ntwo\n")
    got = await _read(vscode, "dos.txt")
    assert (got["eol"], got["bom"]) == ("lf", True)  # a reopen forgets what was declared
    # A declaration for a document not open changes nothing.
    await _declare(vscode, "other.txt", eol="crlf", bom=True)
    vscode.write_file("other.txt", "x\n")
    assert (await _read(vscode, "other.txt"))["eol"] == "lf"


@pytest.mark.asyncio
async def test_the_sha256_of_the_file_a_buffer_shows_unchanged_is_not_stale(vscode: Editor):
    data = "\ufeffone\r\ntwo\r\n".encode()
    vscode.write_file("dos.txt", data)
    vscode.open("dos.txt", text="one\ntwo\n")  # as Emacs shows it
    await _declare(vscode, "dos.txt", eol="crlf", bom=True)
    on_disk = hashlib.sha256(data).hexdigest()  # what `sha256sum dos.txt` says
    args = {"path": "dos.txt", "oldText": "two", "newText": "TWO"}
    got = await vscode.command("agentEdit.replace", {**args, "expect": {"sha256": on_disk}})
    assert got["ok"], got
    assert vscode.text("dos.txt") == "one\nTWO\n"
    # Bytes the buffer would not save as stay STALE (here: the file before the edit).
    again = await vscode.command("agentEdit.replace", {**args, "expect": {"sha256": on_disk}})
    assert again["ok"] is False and again["code"] == "STALE", again


@pytest.mark.asyncio
async def test_undo_on_disk_of_a_buffer_edit_keeps_the_files_bom(vscode: Editor):
    # The edit was recorded from a buffer, whose text hides the BOM; the undo runs once the
    # editor saved and closed the file, on disk. It wrote the file without its BOM, and its
    # diff said nothing of it.
    vscode.write_file("bom.txt", "\ufeffone\ntwo\n")
    doc = vscode.open("bom.txt")
    await _read(vscode, "bom.txt")
    edit = await vscode.command(
        "agentEdit.replace", {"path": "bom.txt", "oldText": "two", "newText": "TWO"}
    )
    assert edit["ok"], edit
    vscode.write_file("bom.txt", "\ufeffone\nTWO\n")  # the editor saves (its BOM kept)
    vscode.client.text_document_did_close(
        t.DidCloseTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=doc.uri))
    )
    undo = await vscode.command("agentEdit.undo", {"editId": edit["editId"]})
    assert undo["ok"], undo
    assert (vscode.root / "bom.txt").read_bytes() == "\ufeffone\ntwo\n".encode()
