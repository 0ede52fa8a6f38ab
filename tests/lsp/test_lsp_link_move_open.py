"""A Move whose source is a symbolic link (it moves the link itself, actions/links.py) and whose
destination is open in the editor: the editor is never sent a rename from the link's URI (its
buffers are keyed by real path, so it would rename the link as if it were the file), and
nothing is written on disk under the open buffer. The destination open when the patch is planned
is ALREADY_EXISTS (its buffer is a file the move would overwrite); opened while the disk side is
prepared, the commit refuses STALE (lsp/disk_side.py `check_still_closed`)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from lsprotocol import types as t
from pygls.uris import to_fs_path
from pytest_lsp import LanguageClient

from lsp_server.engine import files
from lsp_server.engine.errors import EditError
from lsp_server.engine.model import FileChange
from lsp_server.engine.text import LinkRead, Snapshot
from lsp_server.lsp import disk_side
from lsp_server.lsp.apply import Location, uri_of
from lsp_server.lsp.documents import DocumentStore
from tests.editor_client import EDITORS, STATE_DIR, start_session

MOVE = "*** Begin Patch\n*** Update File: l.txt\n*** Move to: m.txt\n@@\n-one\n+1\n*** End Patch\n"


def workspace(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.txt").write_text("one\n")
    os.symlink("a.txt", root / "l.txt")
    return root


def untouched(root: Path) -> None:
    assert os.readlink(root / "l.txt") == "a.txt"
    assert (root / "a.txt").read_text() == "one\n"
    assert not os.path.lexists(root / "m.txt")
    assert [p for p in root.rglob("*") if ".agent-edit-" in p.name] == []


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", EDITORS)
async def test_move_of_a_link_onto_an_open_unsaved_buffer_is_refused(
    client: LanguageClient, tmp_path: Path, kind: str
) -> None:
    root = workspace(tmp_path / "ws")
    ed = await start_session(client, kind, root)
    ed.open("m.txt", "typed, never saved\n")  # a new file's buffer: nothing on disk yet
    result = await ed.command("agentEdit.applyPatch", {"patch": MOVE})
    assert result["ok"] is False and result["code"] == "ALREADY_EXISTS", result
    assert ed.apply_requests == []
    untouched(root)
    assert ed.text("m.txt") == "typed, never saved\n"


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", EDITORS)
async def test_move_of_a_link_whose_destination_is_opened_meanwhile_is_stale(
    client: LanguageClient, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace(tmp_path / "ws")
    ed = await start_session(client, kind, root)
    monkeypatch.setenv(files.STATE_DIR_ENV, STATE_DIR)
    with files.workspace_lock(str(root)):
        # The disk side waits for the lock (a CLI apply holds it); the user opens a new buffer
        # at the destination meanwhile. The read, sent after both, is answered once the server
        # has handled the didOpen.
        params = t.ExecuteCommandParams(command="agentEdit.applyPatch", arguments=[{"patch": MOVE}])
        # Written to the server now (send_request), before the didOpen below.
        edit = asyncio.wrap_future(client.protocol.send_request("workspace/executeCommand", params))
        ed.open("m.txt", "typed, never saved\n")
        read = await asyncio.wait_for(ed.command("agentEdit.read", {"path": "m.txt"}), 30)
        assert read["source"] == "buffer", read
        assert not edit.done()
    result = await asyncio.wait_for(edit, 60)
    assert result["ok"] is False and result["code"] == "STALE", result
    assert result["details"]["reason"] == "OPENED_IN_EDITOR", result
    assert ed.apply_requests == []
    untouched(root)
    assert ed.text("m.txt") == "typed, never saved\n"


def test_a_link_change_is_never_split_to_the_editor(tmp_path: Path) -> None:
    """The split itself: a move of a link (or its removal) whose destination has a buffer goes
    neither to the editor (a rename from the link's URI) nor to the disk (under the buffer): it
    is refused, whatever path led there."""
    root = workspace(tmp_path / "ws")
    store = DocumentStore(to_fs_path)
    dest = str(root / "m.txt")
    store.open(uri_of(dest), "plaintext", 1, "typed, never saved\n")
    link = os.lstat(root / "l.txt")
    before = Snapshot("l.txt", "one\n", link=LinkRead(link.st_ino, link.st_mtime_ns, "a.txt"))
    change = FileChange("move", before, (), moved_to="m.txt")
    where = {
        "l.txt": Location(str(root / "l.txt"), uri_of(str(root / "l.txt"))),
        "m.txt": Location(dest, uri_of(dest)),
    }
    everything = frozenset({"create", "rename", "delete"})
    with pytest.raises(EditError) as refused:
        disk_side.split([change], where, store, everything)
    assert refused.value.code == "UNSUPPORTED", refused.value
    assert refused.value.details["reason"] == "LINK_ONTO_BUFFER", refused.value.details
    assert "m.txt" in refused.value.message and "link" in refused.value.message
