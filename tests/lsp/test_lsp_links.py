"""A Delete File, or a Move's source, that names a symbolic link removes the link through the
language server, never the file it points to (actions/links.py); when that file is open in the
editor, its buffer stays open and as it was: the link is no buffer (the document store is keyed
by real path), so it is removed on disk (lsp/disk_side.py) and nothing is sent to the editor."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.editor_client import start_session

DELETE = "*** Begin Patch\n*** Delete File: l.txt\n*** End Patch\n"
MOVE = "*** Begin Patch\n*** Update File: l.txt\n*** Move to: m.txt\n-one\n+1\n*** End Patch\n"


def workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "a.txt").write_text("one\n")
    os.symlink("a.txt", root / "l.txt")
    return root


@pytest.mark.asyncio
async def test_delete_of_a_link_to_an_open_file_removes_the_link_and_keeps_the_buffer(
    client: Any, tmp_path: Path
) -> None:
    editor = await start_session(client, "visual-studio-code", workspace(tmp_path / "ws"))
    doc = editor.open("a.txt")
    editor.type("a.txt", 1, 0, "typed, unsaved\n")  # the buffer differs from the disk
    dry = await editor.command("agentEdit.applyPatch", {"patch": DELETE, "dryRun": True})
    assert dry["ok"], dry
    assert (editor.root / "l.txt").is_symlink()  # a dry run changes nothing
    served = await editor.command("agentEdit.applyPatch", {"patch": DELETE})
    assert served["ok"], served
    assert [f["path"] for f in served["files"]] == [f["path"] for f in dry["files"]] == ["l.txt"]
    assert not os.path.lexists(editor.root / "l.txt")
    assert (editor.root / "a.txt").read_text() == "one\n"
    assert editor.apply_requests == []  # nothing was sent to the editor: the buffer is a.txt's
    assert editor.text("a.txt") == doc.text == "one\ntyped, unsaved\n"
    read = await editor.command("agentEdit.read", {"path": "a.txt"})
    assert read["ok"] and read["source"] == "buffer", read  # still open


@pytest.mark.asyncio
async def test_move_of_a_link_to_an_open_file_moves_the_link_and_keeps_the_buffer(
    client: Any, tmp_path: Path
) -> None:
    editor = await start_session(client, "visual-studio-code", workspace(tmp_path / "ws"))
    editor.open("a.txt")
    dry = await editor.command("agentEdit.applyPatch", {"patch": MOVE, "dryRun": True})
    assert dry["ok"], dry
    assert (editor.root / "l.txt").is_symlink() and not (editor.root / "m.txt").exists()
    served = await editor.command("agentEdit.applyPatch", {"patch": MOVE})
    assert served["ok"], served
    strip = [{k: v for k, v in f.items() if k != "saved"} for f in served["files"]]
    assert strip == dry["files"]
    assert strip[0]["path"] == "l.txt" and strip[0]["movedTo"] == "m.txt"
    assert not os.path.lexists(editor.root / "l.txt")
    assert (editor.root / "m.txt").read_text() == "1\n" and not (editor.root / "m.txt").is_symlink()
    assert (editor.root / "a.txt").read_text() == "one\n"
    assert editor.apply_requests == []
    assert editor.text("a.txt") == "one\n"
    read = await editor.command("agentEdit.read", {"path": "a.txt"})
    assert read["ok"] and read["source"] == "buffer", read
