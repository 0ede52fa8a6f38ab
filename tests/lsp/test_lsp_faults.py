"""Fault injection: every failure of a 5-file patch ends all-old, all-new, or PARTIAL with a
committed list that matches the files exactly; never a silent partial.

The editor fails at each change index of one WorkspaceEdit (text edits, rename, delete; the
create of a file not open is the disk side, prepared first and committed after the editor's part)
in each way editors fail: refusing (applied: false), skipping a change yet answering applied:
true, answering with a JSON-RPC error, never answering, or the server dying mid-way.
"""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, server_config, start_session

PATCH = """*** Begin Patch
*** Add File: src/new.py
+print("new")
*** Update File: src/app.py
@@ def main():
-    return 1
+    return 2
*** Update File: old/name.txt
*** Move to: new/name.txt
@@
 keep
-drop
+added
*** Delete File: gone.txt
*** Update File: lib.py
-X = 1
+X = 2
*** End Patch
"""
# With every existing file open (`seed`): src/new.py (not open) is created by the server on
# disk, committed after the editor's part; documentChanges: 0 edit app.py, 1 version guard of
# old/name.txt, 2 RenameFile, 3 edit new/name.txt, 4 version guard of gone.txt, 5 DeleteFile,
# 6 edit lib.py.
CHANGES = 7
OLD = {
    "src/app.py": b"def main():\n    return 1\n",
    "old/name.txt": b"keep\ndrop\n",
    "gone.txt": b"bye\n",
    "lib.py": b"X = 1\n",
}
NEW = {
    "src/new.py": b'print("new")\n',
    "src/app.py": b"def main():\n    return 2\n",
    "new/name.txt": b"keep\nadded\n",
    "lib.py": b"X = 2\n",
}
# Which plan path each file of the views belongs to.
PLAN_PATHS = {
    "src/new.py": "src/new.py",
    "src/app.py": "src/app.py",
    "old/name.txt": "old/name.txt",
    "new/name.txt": "old/name.txt",
    "gone.txt": "gone.txt",
    "lib.py": "lib.py",
}


def seed(ed: Editor, open_all: bool = True) -> None:
    """The files of OLD, open in the editor (all of them, or only src/app.py)."""
    for rel, data in OLD.items():
        ed.write_file(rel, data)
    for rel in OLD if open_all else ["src/app.py"]:
        ed.open(rel)


def landed(view: dict[str, bytes]) -> set[str]:
    """The plan paths whose change shows in `view` (a file's own state, independently)."""
    out = set()
    if view.get("src/new.py") == NEW["src/new.py"]:
        out.add("src/new.py")
    if view.get("src/app.py") == NEW["src/app.py"]:
        out.add("src/app.py")
    if "old/name.txt" not in view and view.get("new/name.txt") == NEW["new/name.txt"]:
        out.add("old/name.txt")
    if "gone.txt" not in view:
        out.add("gone.txt")
    if view.get("lib.py") == NEW["lib.py"]:
        out.add("lib.py")
    return out


def visible(view: dict[str, bytes]) -> dict[str, bytes]:
    # CreateFile leaves an empty file behind if its text edit never came: that is "not landed".
    return {k: v for k, v in view.items() if v or k != "src/new.py"}


def judge(result: dict, view: dict[str, bytes]) -> None:
    done = landed(view)
    if result["ok"]:
        assert visible(view) == NEW, (result, view)
    elif result["code"] == "PARTIAL":
        committed = {c["path"] for c in result["committed"]}
        otherwise = [
            f for f in result["details"]["files"] if f["state"] in ("unknown", "changed-otherwise")
        ]
        # What it saw land is listed; a file left in neither state (a CreateFile whose text
        # never came) is named instead of hidden.
        assert committed == done and (done or otherwise), (result, view)
    else:
        assert result["code"] in {
            "CLIENT_REJECTED",
            "NOT_APPLIED",
            "TIMEOUT",
            "PARTIAL_ROLLED_BACK",
        }
        assert visible(view) == OLD, (result, view)


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["reject", "partial", "error", "hold"])
@pytest.mark.parametrize("index", range(CHANGES))
async def test_fault_at_each_change(client: LanguageClient, tmp_path, mode, index):
    ed = await start_session(
        client,
        "visual-studio-code",
        tmp_path,
        options={"applyTimeoutMs": 400, "verifyTimeoutMs": 400},
    )
    seed(ed)
    if mode == "partial":
        ed.skip_changes = {index}
    else:
        ed.fail_at, ed.fail_mode = index, mode
    result = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    ed.release()
    await asyncio.sleep(0.05)
    judge(result, ed.view())
    hist = await ed.command("agentEdit.history", {"format": "json"})
    last = hist["entries"][-1]
    if not result["ok"] and result["code"] == "TIMEOUT" and result["details"].get("unconfirmed"):
        # Nothing showed, so the editor may still apply it: pending until its late answer (a
        # refusal here) settles it from what the files show.
        assert last["outcome"] in ("pending", "NOT_APPLIED"), last
    else:
        assert last["outcome"] == ("applied" if result["ok"] else result["code"])
    if not result["ok"]:
        assert "read" in result["hint"].lower() or "inspect" in result["hint"].lower()


@pytest.mark.asyncio
@pytest.mark.parametrize("index", [0, 2, 4, 6])
async def test_server_killed_between_apply_and_outcome(tmp_path, index):
    first = await server_config().start()
    try:
        ed = await start_session(first, "visual-studio-code", tmp_path)
        seed(ed)
        ed.fail_at, ed.fail_mode = index, "kill"
        with pytest.raises(Exception):  # noqa: B017 - the server is gone: no answer of any kind
            await asyncio.wait_for(ed.command("agentEdit.applyPatch", {"patch": PATCH}), 10)
    finally:
        await first.stop()  # no shutdown handshake with a dead server
    view = ed.view()
    # The editor keeps its buffers and starts a new server, which re-opens them.
    second = await server_config().start()
    try:
        ed2 = await start_session(second, "visual-studio-code", tmp_path)
        for uri, doc in ed.docs.items():
            rel = uri.split(tmp_path.as_uri() + "/", 1)[1]
            ed2.open(rel, doc.text)
        # The disk side may have been prepared: its rollback is said first (nothing of it had
        # changed anything yet), then what became of the edit.
        while True:
            message = await asyncio.wait_for(
                second.wait_for_notification(t.WINDOW_SHOW_MESSAGE), 10
            )
            if "was interrupted" in message.message:
                break
            assert "nothing had changed yet" in message.message, message
        view = ed.view()  # after the rollback: the temporary file of the disk side is gone
        assert not [k for k in view if ".agent-edit-" in k], view
        hist = await ed2.command("agentEdit.history", {"format": "json"})
        entry = [e for e in hist["entries"] if e["action"] != "recover"][-1]
        done = landed(view)
        # Undo is offered only for an edit of which something landed.
        assert ("agentEdit.undo" in message.message) == (entry["outcome"] != "NOT_APPLIED")
        if entry["outcome"] == "applied":
            assert visible(view) == NEW
        elif entry["outcome"] == "PARTIAL":
            applied = {c["path"] for c in entry["committed"] if c["state"] == "applied"}
            assert applied == done and done, (entry["committed"], view)
        else:
            assert entry["outcome"] == "NOT_APPLIED" and visible(view) == OLD, (entry, view)
    finally:
        await second.shutdown_session()
        await second.stop()


@pytest.mark.asyncio
@pytest.mark.parametrize("stall", range(1, 5))
async def test_rollback_answered_late(client: LanguageClient, tmp_path, stall):
    """The editor skips a change (so the server rolls back what landed), then stops part-way
    through the rollback, before its change `stall`, for longer than applyTimeoutMs, and only
    then finishes it and answers: a busy editor. On CI a long garbage collection in the test's
    own process (the editor here) did this to test_fault_at_each_change[0-partial] three times:
    the result named lib.py and gone.txt as landed, and the rollback restored them a moment later.

    The result may not name as landed (`committed`) a file the rollback was sent for and may
    still restore: the server waits for the late answer once more, and what it has not seen
    restored by then is "unknown". Either way it must match what the editor shows after."""
    ed = await start_session(
        client,
        "visual-studio-code",
        tmp_path,
        options={"applyTimeoutMs": 200, "verifyTimeoutMs": 200},
    )
    seed(ed)
    ed.skip_changes = {0}
    ed.stall_at = (2, stall)  # the 2nd applyEdit is the rollback
    command = asyncio.ensure_future(ed.command("agentEdit.applyPatch", {"patch": PATCH}))
    await ed.stalled.wait()
    done, _ = await asyncio.wait([command], timeout=30)
    assert done, "the server waited for the stalled editor without end"
    ed.resume()
    await ed.stall_done.wait()
    result = await asyncio.wait_for(command, 30)
    assert not result["ok"]
    assert result["code"] in ("PARTIAL", "PARTIAL_ROLLED_BACK"), result
    judge(result, ed.view())
    if result["code"] == "PARTIAL":
        unknown = [f for f in result["details"]["files"] if f["state"] == "unknown"]
        assert unknown and all("rollback" in f.get("note", "") for f in unknown), result
