"""Files not open go through the disk writer for every editor (issue 14 item 1).

A file the editor has not open is changed by the server on disk (prepare, then commit after the
editor's part), never by a null-version applyEdit; open buffers by one versioned applyEdit. The
disk is changed at exact steps of the server's own apply through the writer's test hook
(tests/disk_hooks.py), so each race is deterministic.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.editor_client import EDITORS, Editor, server_config, start_session
from tests.lsp.test_lsp_honest import _settled

CONTROL = Path(tempfile.mkdtemp(prefix="agent-edit-hook-")) / "control.json"


def _hooked_config() -> ClientServerConfig:
    base = server_config()
    env = dict(base.server_env or {})
    env["AGENT_EDIT_TEST_CONTROL"] = str(CONTROL)
    return ClientServerConfig(
        server_command=[sys.executable, "-m", "tests.disk_hooks"], server_env=env
    )


@pytest_lsp.fixture(config=_hooked_config())
async def hooked(lsp_client: LanguageClient):
    CONTROL.unlink(missing_ok=True)
    yield lsp_client
    CONTROL.unlink(missing_ok=True)
    await lsp_client.shutdown_session()


def pytest_sessionfinish() -> None:  # pragma: no cover - cleanup only
    shutil.rmtree(CONTROL.parent, True)


def save_at(point: str, path: Path, text: str) -> None:
    """At `point` of the server's next disk apply, the user saves `text` into `path`."""
    CONTROL.write_text(json.dumps({"point": point, "path": str(path), "text": text}))


async def entry(ed: Editor, edit_id: int) -> dict[str, Any]:
    hist = await ed.command("agentEdit.history", {"format": "json"})
    (found,) = [e for e in hist["entries"] if e["id"] == edit_id]
    return dict(found)


def no_temporaries(root: Path) -> None:
    assert [p for p in root.rglob("*") if ".agent-edit-" in p.name] == []


PATCH = """*** Begin Patch
*** Update File: shown.txt
@@
-shown
+SHOWN
*** Update File: closed.txt
@@
 one
-two
+2
*** End Patch
"""


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", EDITORS)
async def test_disk_changed_at_the_moment_of_apply_is_stale_and_nothing_lands(
    hooked: LanguageClient, tmp_path: Path, kind: str
):
    ed = await start_session(hooked, kind, tmp_path)
    path = ed.write_file("closed.txt", "one\ntwo\nthree\n")
    await ed.command("agentEdit.read", {"path": "closed.txt"})
    # The user saves a new first line after the server checked the file, before its rename
    # (or, were the edit sent to the editor as a null-version applyEdit, as the editor loads it).
    save_at("written", path, "zero\none\ntwo\nthree\n")
    ed.before_change = lambda index: path.write_text("zero\none\ntwo\nthree\n")
    result = await ed.command(
        "agentEdit.replace", {"path": "closed.txt", "oldText": "two", "newText": "2"}
    )
    assert result["code"] == "STALE", result
    assert not CONTROL.exists()  # the save happened at that step
    assert path.read_text() == "zero\none\ntwo\nthree\n"  # the user's save, nothing of ours
    assert ed.apply_requests == [] and ed.docs == {}
    no_temporaries(tmp_path)
    edit_id = result["details"]["editId"]
    recorded = await entry(ed, edit_id)
    assert recorded["outcome"] == "STALE", recorded
    undo = await ed.command("agentEdit.undo", {"editId": edit_id})
    assert not undo["ok"], undo
    assert path.read_text() == "zero\none\ntwo\nthree\n"


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", EDITORS)
async def test_mixed_edit_whose_disk_commit_fails_rolls_the_buffers_back(
    hooked: LanguageClient, tmp_path: Path, kind: str
):
    ed = await start_session(hooked, kind, tmp_path)
    ed.write_file("shown.txt", "shown\n")
    closed = ed.write_file("closed.txt", "one\ntwo\n")
    ed.open("shown.txt")
    for p in ("shown.txt", "closed.txt"):
        await ed.command("agentEdit.read", {"path": p})
    save_at("written", closed, "one\ntwo\nsaved\n")
    result = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert result["code"] == "PARTIAL_ROLLED_BACK", result
    assert result["committed"] == []
    assert result["details"]["diskError"]["code"] == "STALE", result
    assert ed.text("shown.txt") == "shown\n"  # the buffer's part was rolled back
    assert closed.read_text() == "one\ntwo\nsaved\n"
    # One applyEdit for the buffer, one for its rollback; none for the file not open.
    uris = {c.text_document.uri for r in ed.apply_requests for c in r.edit.document_changes}
    assert uris == {ed.uri("shown.txt")}
    no_temporaries(tmp_path)


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", EDITORS)
async def test_mixed_edit_lands_whole_and_its_undo_restores_buffer_and_disk(
    hooked: LanguageClient, tmp_path: Path, kind: str
):
    ed = await start_session(hooked, kind, tmp_path)
    ed.write_file("shown.txt", "shown\n")
    closed = ed.write_file("closed.txt", "one\ntwo\n")
    ed.open("shown.txt")
    for p in ("shown.txt", "closed.txt"):
        await ed.command("agentEdit.read", {"path": p})
    result = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert result["ok"], result
    assert [f["path"] for f in result["files"]] == ["shown.txt", "closed.txt"]
    assert ed.text("shown.txt") == "SHOWN\n" and closed.read_text() == "one\n2\n"
    assert "+2" in result["diff"] and "+SHOWN" in result["diff"]
    assert ed.docs.keys() == {ed.uri("shown.txt")}  # no tab opened for the file not open
    undo = await ed.command("agentEdit.undo", {"editId": result["editId"]})
    assert undo["ok"], undo
    assert ed.text("shown.txt") == "shown\n" and closed.read_text() == "one\ntwo\n"
    assert (await entry(ed, result["editId"]))["outcome"] == "applied"
    no_temporaries(tmp_path)


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", EDITORS)
async def test_undo_of_a_disk_side_edit_from_the_server(
    hooked: LanguageClient, tmp_path: Path, kind: str
):
    ed = await start_session(hooked, kind, tmp_path)
    path = ed.write_file("closed.txt", "one\ntwo\n")
    await ed.command("agentEdit.read", {"path": "closed.txt"})
    result = await ed.command(
        "agentEdit.replace", {"path": "closed.txt", "oldText": "two", "newText": "2"}
    )
    assert result["ok"], result
    assert path.read_text() == "one\n2\n"
    undo = await ed.command("agentEdit.undo", {"editId": result["editId"]})
    assert undo["ok"], undo
    assert path.read_text() == "one\ntwo\n"
    assert ed.apply_requests == [] and ed.docs == {}
    # The undo works from what the disk holds now: a line the user added since is kept.
    again = await ed.command(
        "agentEdit.replace", {"path": "closed.txt", "oldText": "two", "newText": "2"}
    )
    assert again["ok"], again
    path.write_text("one\n2\nuser\n")
    undo = await ed.command("agentEdit.undo", {"editId": again["editId"]})
    assert undo["ok"], undo
    assert path.read_text() == "one\ntwo\nuser\n"
    assert ed.apply_requests == [] and ed.docs == {}


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", EDITORS)
async def test_file_opened_while_the_buffers_are_applied_is_not_written_under_the_buffer(
    hooked: LanguageClient, tmp_path: Path, kind: str
):
    ed = await start_session(hooked, kind, tmp_path)
    ed.write_file("shown.txt", "shown\n")
    closed = ed.write_file("closed.txt", "one\ntwo\n")
    ed.open("shown.txt")
    for p in ("shown.txt", "closed.txt"):
        await ed.command("agentEdit.read", {"path": p})

    def open_closed(index: int) -> None:
        ed.before_change = None
        ed.open("closed.txt")  # the user opens it while the editor applies the buffer's part

    ed.before_change = open_closed
    result = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert result["code"] == "PARTIAL_ROLLED_BACK", result
    assert result["details"]["diskError"]["reason"] == "OPENED_IN_EDITOR", result
    assert closed.read_text() == "one\ntwo\n" and ed.text("closed.txt") == "one\ntwo\n"
    assert ed.text("shown.txt") == "shown\n"
    no_temporaries(tmp_path)
    # Sent again, it goes to the open buffer now.
    await ed.command("agentEdit.read", {"path": "closed.txt"})
    await ed.command("agentEdit.read", {"path": "shown.txt"})
    again = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert again["ok"], again
    assert ed.text("closed.txt") == "one\n2\n" and ed.text("shown.txt") == "SHOWN\n"
    assert closed.read_text() == "one\ntwo\n"  # an open buffer is the editor's to save


@pytest.mark.asyncio
async def test_mixed_edit_refused_by_the_editor_leaves_the_disk_untouched(
    hooked: LanguageClient, tmp_path: Path
):
    ed = await start_session(hooked, "visual-studio-code", tmp_path)
    ed.write_file("shown.txt", "shown\n")
    closed = ed.write_file("closed.txt", "one\ntwo\n")
    ed.open("shown.txt")
    for p in ("shown.txt", "closed.txt"):
        await ed.command("agentEdit.read", {"path": p})
    ed.reject_all = True
    result = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert result["code"] == "CLIENT_REJECTED", result
    assert closed.read_text() == "one\ntwo\n" and ed.text("shown.txt") == "shown\n"
    no_temporaries(tmp_path)
    ed.reject_all = False
    assert (await ed.command("agentEdit.read", {"path": "closed.txt"}))["ok"]


@pytest.mark.asyncio
async def test_disk_side_over_two_workspace_folders_is_refused_whole(
    hooked: LanguageClient, tmp_path: Path
):
    ws = tmp_path / "ws"
    ws.mkdir()
    ed = await start_session(hooked, "visual-studio-code", ws)
    other = tmp_path / "other"
    other.mkdir()
    b = other / "b.txt"
    b.write_text("bee\n")
    a = ed.write_file("a.txt", "ay\n")
    ed.client.workspace_did_change_workspace_folders(
        t.DidChangeWorkspaceFoldersParams(
            event=t.WorkspaceFoldersChangeEvent(
                added=[t.WorkspaceFolder(uri=other.as_uri(), name="other")], removed=[]
            )
        )
    )
    for p in ("a.txt", str(b)):
        assert (await ed.command("agentEdit.read", {"path": p}))["ok"]
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-ay\n+A\n"
        f"*** Update File: {b}\n@@\n-bee\n+B\n*** End Patch\n"
    )
    result = await ed.command("agentEdit.applyPatch", {"patch": patch})
    assert result["code"] == "UNSUPPORTED", result
    assert a.read_text() == "ay\n" and b.read_text() == "bee\n"
    assert ed.apply_requests == [] and ed.docs == {}
    # One folder's file alone is written in that folder.
    one = await ed.command("agentEdit.replace", {"path": str(b), "oldText": "bee", "newText": "B"})
    assert one["ok"], one
    assert b.read_text() == "B\n"
    no_temporaries(tmp_path)


@pytest.mark.asyncio
async def test_unverified_buffers_leave_the_disk_side_unwritten_and_say_so(
    hooked: LanguageClient, tmp_path: Path
):
    """eglot answers applied but sends didChange late: the files not open are not written on
    that basis, the result says so, and the settled entry does not claim them."""
    ed = await start_session(hooked, "emacs", tmp_path)
    ed.write_file("shown.txt", "shown\n")
    closed = ed.write_file("closed.txt", "one\ntwo\n")
    ed.open("shown.txt")
    for p in ("shown.txt", "closed.txt"):
        await ed.command("agentEdit.read", {"path": p})
    ed.defer_changes = True
    result = await ed.client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="agentEdit.applyPatch", arguments=[{"patch": PATCH}])
    )
    assert result["code"] == "UNVERIFIED", result
    assert result["details"]["notWritten"] == ["closed.txt"], result
    assert "closed.txt" in result["message"] and closed.read_text() == "one\ntwo\n"
    no_temporaries(tmp_path)
    ed.flush()
    edit_id = result["details"]["editId"]
    found = await _settled(ed, edit_id)
    assert found["outcome"] == "PARTIAL", found  # shown.txt landed, closed.txt did not
    assert closed.read_text() == "one\ntwo\n"


@pytest.mark.asyncio
async def test_a_held_workspace_lock_does_not_freeze_the_server(
    hooked: LanguageClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Another process holding the workspace lock (a CLI apply, another server waiting for its
    editor) makes this server's disk-side edit wait for it, never its other requests: the lock
    is taken in a worker thread. Before, the event loop itself sat in flock."""
    import asyncio

    from lsp_server.engine import files
    from tests.editor_client import STATE_DIR

    ed = await start_session(hooked, "visual-studio-code", tmp_path)
    closed = ed.write_file("closed.txt", "one\ntwo\n")
    ed.write_file("other.txt", "other\n")
    monkeypatch.setenv(files.STATE_DIR_ENV, STATE_DIR)
    with files.workspace_lock(str(tmp_path)):
        edit = asyncio.ensure_future(
            ed.command(
                "agentEdit.replace", {"path": "closed.txt", "oldText": "two", "newText": "2"}
            )
        )
        # Sent after the edit, so handled after its handler reached the lock: with the loop
        # blocked this answer never comes (the bound only ends the failing case).
        read = await asyncio.wait_for(ed.command("agentEdit.read", {"path": "other.txt"}), 30)
        assert read["text"] == "other\n", read
        assert not edit.done()
        assert closed.read_text() == "one\ntwo\n"
    result = await asyncio.wait_for(edit, 60)
    assert result["ok"], result
    assert closed.read_text() == "one\n2\n"


@pytest.mark.asyncio
async def test_a_cancelled_disk_side_edit_never_leaves_the_workspace_lock_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A request cancelled ($/cancelRequest) while its disk side waits for the workspace lock in
    its worker thread: the thread still takes the lock and prepares; what it prepared must be
    aborted then, or the lock stays held and every later disk edit and CLI apply waits for ever."""
    import asyncio

    from lsp_server.engine import files
    from lsp_server.engine.patching import plan_patch
    from lsp_server.lsp import disk_side

    monkeypatch.setenv(files.STATE_DIR_ENV, str(tmp_path / "state"))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    ws = str(root)
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** End Patch\n"
    changes = list(plan_patch(patch, lambda p: files.read_snapshot(ws, p)).changes)
    # Once the lock is free, the orphaned worker and the check below race for it: the check
    # waits until the orphan's DiskSide was aborted (else it could see the worker's fresh
    # temporaries, which the abort is about to remove).
    orphan_done = asyncio.Event()
    abort_orphan = disk_side._abort_orphan

    def aborting(made: asyncio.Future[disk_side.DiskSide]) -> None:
        try:
            abort_orphan(made)
        finally:
            orphan_done.set()

    monkeypatch.setattr(disk_side, "_abort_orphan", aborting)
    with files.workspace_lock(ws):
        task = asyncio.ensure_future(disk_side.prepare(ws, changes, "applyPatch"))
        await asyncio.sleep(0)  # a loop turn: its worker thread now waits for the lock
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    def take_the_lock() -> None:
        with files.workspace_lock(ws):
            pass

    # The bounds only end the failing case (the orphan never aborted, the lock never freed).
    await asyncio.wait_for(orphan_done.wait(), 30)
    await asyncio.wait_for(asyncio.to_thread(take_the_lock), 30)
    assert (root / "a.txt").read_text() == "a\n"
    no_temporaries(root)
