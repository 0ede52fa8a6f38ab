"""Review of "rollback answered late": an editor that answers an edit, or its rollback, after
applyTimeoutMs. The result, and the history entry after it, may name as landed (`committed`) only
what the editor shows in the end, and a file the editor may still change is "unknown", never
"not changed"; undo of such an entry must leave the files as the editor shows them honestly.

The 5-file patch and its helpers are test_lsp_faults.py's.
"""

from __future__ import annotations

import asyncio

import pytest
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, start_session
from tests.lsp.test_lsp_faults import OLD, PATCH, landed, seed, visible

OPTIONS = {"applyTimeoutMs": 200, "verifyTimeoutMs": 200}


def judge_late(result: dict, view: dict[str, bytes]) -> None:
    """Never a false report: what `committed` names shows in `view`; a file whose change shows
    and is not in `committed` is named "unknown" (it may still change); "nothing is changed"
    (PARTIAL_ROLLED_BACK) only if nothing is."""
    assert not result["ok"], result
    done = landed(view)
    if result["code"] == "PARTIAL_ROLLED_BACK":
        assert visible(view) == OLD, (result, view)
        return
    assert result["code"] == "PARTIAL", result
    committed = {c["path"] for c in result["committed"]}
    unknown = {f["path"] for f in result["details"]["files"] if f["state"] == "unknown"}
    assert committed <= done, (result, view)
    assert done - committed <= unknown, (result, view)


async def _command(ed: Editor) -> dict:
    """Run the patch and wait for its result while the editor is stalled (it must not wait for
    the stalled editor without end)."""
    command = asyncio.ensure_future(ed.command("agentEdit.applyPatch", {"patch": PATCH}))
    await ed.stalled.wait()
    done, _ = await asyncio.wait([command], timeout=30)
    assert done, "the server waited for the stalled editor without end"
    return command.result()


@pytest.mark.asyncio
@pytest.mark.parametrize("stall", [1, 2, 5, 6])
async def test_edit_answered_late_is_not_rolled_back_whole(client: LanguageClient, tmp_path, stall):
    """The editor stops part-way through the edit itself (not its rollback), past applyTimeoutMs:
    the server sees part of it, rolls that back, and the editor then applies the rest of the
    edit. The server may not say "every file is as it was" while the edit is unanswered."""
    ed = await start_session(client, "visual-studio-code", tmp_path, options=OPTIONS)
    seed(ed)
    ed.stall_at = (1, stall)
    result = await _command(ed)
    ed.resume()
    await ed.stall_done.wait()
    judge_late(result, ed.view())
    # What landed late is undone by undo of the entry (its files were "unknown", not "nothing").
    hist = await ed.command("agentEdit.history", {"format": "json"})
    entry = hist["entries"][-1]
    if landed(ed.view()):
        assert entry["undoable"], entry
        undo = await ed.command("agentEdit.undo", {"editId": entry["id"]})
        assert undo["ok"] and visible(ed.view()) == OLD, (undo, ed.view())


@pytest.mark.asyncio
@pytest.mark.parametrize("stall", [1, 2, 3])
async def test_rollback_never_answered_then_undo(client: LanguageClient, tmp_path, stall):
    """The rollback stalls until after the result (files it was sent for are "unknown"), then
    lands. The history entry and undo of it must match what the editor shows."""
    ed = await start_session(client, "visual-studio-code", tmp_path, options=OPTIONS)
    seed(ed)
    ed.skip_changes = {0}
    ed.stall_at = (2, stall)  # the 2nd applyEdit is the rollback
    result = await _command(ed)
    judge_late(result, ed.view())
    ed.resume()
    await ed.stall_done.wait()
    view = ed.view()
    assert visible(view) == OLD, view  # the rollback landed whole, late
    hist = await ed.command("agentEdit.history", {"format": "json"})
    entry = hist["entries"][-1]
    applied = {c["path"] for c in entry.get("committed", []) if c["state"] == "applied"}
    assert applied <= landed(view), entry
    undo = await ed.command("agentEdit.undo", {"editId": entry["id"]})
    # Nothing of the edit is left: undo changes nothing (refused, or a no-op), never a new edit.
    assert visible(ed.view()) == OLD, (undo, ed.view())


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["reject", "error"])
async def test_rollback_refused_after_the_result_then_undo(client: LanguageClient, tmp_path, mode):
    """The rollback is not answered by the result (its files are "unknown"), then refused before
    it changed anything: the files still show the edit. The history entry may not say the edit
    "changed nothing": undo of it is offered and reverts what still shows."""
    ed = await start_session(client, "visual-studio-code", tmp_path, options=OPTIONS)
    seed(ed)
    ed.skip_changes = {0}

    def arm_rollback(index: int) -> None:
        if len(ed.apply_requests) == 1:  # read by the next applyEdit: the rollback
            ed.fail_at, ed.fail_mode = 0, mode

    ed.before_change = arm_rollback
    ed.stall_at = (2, 0)  # the rollback stops before its first change, then fails there
    result = await _command(ed)
    judge_late(result, ed.view())
    ed.before_change = None
    ed.resume()
    shown = ed.view()
    assert landed(shown), shown  # the rollback was refused: the edit still shows
    hist = await ed.command("agentEdit.history", {"format": "json"})
    entry = hist["entries"][-1]
    assert entry["undoable"], entry
    undo = await ed.command("agentEdit.undo", {"editId": entry["id"]})
    assert undo["ok"] and visible(ed.view()) == OLD, (undo, ed.view())


@pytest.mark.asyncio
async def test_edit_answered_late_while_the_user_types(client: LanguageClient, tmp_path):
    """The editor stalls before the first change of the edit and the user types in lib.py
    meanwhile: at applyTimeoutMs nothing of the edit shows, one file shows typing. The editor
    may still apply the edit, so no file may be called "not-applied" (nor the entry finished as
    if nothing was changed) until it answers or shows the files."""
    ed = await start_session(client, "visual-studio-code", tmp_path, options=OPTIONS)
    seed(ed)
    ed.stall_at = (1, 0)
    command = asyncio.ensure_future(ed.command("agentEdit.applyPatch", {"patch": PATCH}))
    await ed.stalled.wait()
    ed.type("lib.py", 1, 0, "# typed\n")
    done, _ = await asyncio.wait([command], timeout=30)
    assert done, "the server waited for the stalled editor without end"
    result = command.result()
    assert not result["ok"], result
    states = {f["path"]: f["state"] for f in result["details"]["files"]}
    assert "not-applied" not in states.values(), result
    ed.resume()
    await ed.stall_done.wait()
    hist = await ed.command("agentEdit.history", {"format": "json"})
    entry = hist["entries"][-1]
    # Settled from what the files show (or still pending): never "changed nothing".
    assert entry["outcome"] not in ("TIMEOUT", "NOT_APPLIED"), entry
