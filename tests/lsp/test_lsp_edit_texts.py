"""`agentEdit.history {texts: true}`: whole before/after texts for a diff editor, through the real
server. The texts must be the file's own (so the diff editor's line numbers are the file's), an
added file diffs against empty, and when the edit's lines changed since, the answer says so
instead of inventing a view."""

from __future__ import annotations

import pytest

from tests.editor_client import Editor

TEXT = "one\ntwo\nthree\nfour\nfive\n"


async def _replace(ed: Editor, path: str, old: str, new: str) -> dict:
    await ed.command("agentEdit.read", {"path": path})
    result = await ed.command("agentEdit.replace", {"path": path, "oldText": old, "newText": new})
    assert result["ok"], result
    return result


async def _texts(ed: Editor, **args: object) -> dict:
    return await ed.command("agentEdit.history", {"texts": True, **args})


@pytest.mark.asyncio
async def test_edit_texts_are_the_whole_file_before_and_after(vscode: Editor):
    vscode.write_file("a.txt", TEXT)
    vscode.open("a.txt")
    edit = await _replace(vscode, "a.txt", "four", "FOUR")
    got = await _texts(vscode, editId=edit["editId"])
    assert got["ok"] and got["editId"] == edit["editId"]
    (f,) = got["files"]
    assert (f["path"], f["change"]) == ("a.txt", "update")
    assert f["before"] == TEXT
    assert f["after"] == TEXT.replace("four", "FOUR")


@pytest.mark.asyncio
async def test_user_typing_elsewhere_is_on_both_sides_in_the_files_line_numbers(vscode: Editor):
    vscode.write_file("a.txt", TEXT)
    vscode.open("a.txt")
    edit = await _replace(vscode, "a.txt", "four", "FOUR")
    vscode.type("a.txt", 0, 0, "# user 1\n# user 2\n")
    (f,) = (await _texts(vscode, editId=edit["editId"]))["files"]
    now = "# user 1\n# user 2\n" + TEXT.replace("four", "FOUR")
    assert f["after"] == now == vscode.text("a.txt")
    assert f["before"] == "# user 1\n# user 2\n" + TEXT
    # The changed line is line 6 on both sides, as in the editor.
    assert f["before"].splitlines()[5] == "four" and f["after"].splitlines()[5] == "FOUR"


@pytest.mark.asyncio
async def test_lines_changed_since_give_a_reason_not_a_made_up_view(vscode: Editor):
    vscode.write_file("a.txt", TEXT)
    vscode.write_file("b.txt", "bee\n")
    vscode.open("a.txt")
    vscode.open("b.txt")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n three\n-four\n+FOUR\n"
        "*** Update File: b.txt\n@@\n-bee\n+BEE\n*** End Patch\n"
    )
    edit = await vscode.command("agentEdit.applyPatch", {"patch": patch})
    assert edit["ok"], edit
    vscode.type("a.txt", 3, 0, "X", end=(3, 4))  # the user rewrites the agent's line
    files = {f["path"]: f for f in (await _texts(vscode, editId=edit["editId"]))["files"]}
    assert "before" not in files["a.txt"] and "after" not in files["a.txt"]
    assert "were changed again since" in files["a.txt"]["reason"], files["a.txt"]
    # One file's conflict does not hide the other's texts.
    assert (files["b.txt"]["before"], files["b.txt"]["after"]) == ("bee\n", "BEE\n")


@pytest.mark.asyncio
async def test_added_moved_and_deleted_files(vscode: Editor):
    vscode.write_file("old.txt", "keep\n")
    vscode.write_file("gone.txt", "bye\n")
    patch = (
        "*** Begin Patch\n*** Add File: new.txt\n+hello\n"
        "*** Update File: old.txt\n*** Move to: moved.txt\n@@\n keep\n+more\n"
        "*** Delete File: gone.txt\n*** End Patch\n"
    )
    edit = await vscode.command("agentEdit.applyPatch", {"patch": patch})
    assert edit["ok"], edit
    files = {f["path"]: f for f in (await _texts(vscode, editId=edit["editId"]))["files"]}
    assert (files["new.txt"]["before"], files["new.txt"]["after"]) == ("", "hello\n")
    assert files["old.txt"]["movedTo"] == "moved.txt"
    assert (files["old.txt"]["before"], files["old.txt"]["after"]) == ("keep\n", "keep\nmore\n")
    assert (files["gone.txt"]["before"], files["gone.txt"]["after"]) == ("bye\n", "")


@pytest.mark.asyncio
async def test_refused_edit_and_unknown_id(vscode: Editor):
    vscode.write_file("a.txt", TEXT)
    vscode.open("a.txt")
    await vscode.command("agentEdit.read", {"path": "a.txt"})
    refused = await vscode.command(
        "agentEdit.replace", {"path": "a.txt", "oldText": "zzz", "newText": "y"}
    )
    assert refused["code"] == "NO_MATCH"
    got = await _texts(vscode, editId=refused["details"]["editId"])
    assert got["ok"] and got["files"] == []
    missing = await _texts(vscode, editId=999)
    assert missing["ok"] is False and missing["code"] == "INVALID_ARGUMENT"


@pytest.mark.asyncio
async def test_net_texts_are_baseline_and_the_agents_last_text(vscode: Editor):
    vscode.write_file("a.txt", TEXT)
    vscode.open("a.txt")
    await _replace(vscode, "a.txt", "two", "TWO")
    await _replace(vscode, "a.txt", "five", "FIVE")
    await vscode.command("agentEdit.write", {"path": "n.txt", "text": "new\n"})
    files = {f["path"]: f for f in (await _texts(vscode))["files"]}
    assert files["a.txt"]["before"] == TEXT
    assert files["a.txt"]["after"] == TEXT.replace("two", "TWO").replace("five", "FIVE")
    assert (files["n.txt"]["change"], files["n.txt"]["before"]) == ("add", "")
    assert files["n.txt"]["after"] == "new\n"


@pytest.mark.asyncio
async def test_an_undone_edit_is_shown_through_its_undo(vscode: Editor):
    vscode.write_file("a.txt", TEXT)
    vscode.open("a.txt")
    edit = await _replace(vscode, "a.txt", "four", "FOUR")
    undo = await vscode.command("agentEdit.undo", {"editId": edit["editId"]})
    assert undo["ok"], undo
    vscode.type("a.txt", 0, 0, "# user\n")  # typing elsewhere afterwards
    (f,) = (await _texts(vscode, editId=edit["editId"]))["files"]
    assert "reason" not in f, f
    assert f["before"] == "# user\n" + TEXT
    assert f["after"] == "# user\n" + TEXT.replace("four", "FOUR")
    (u,) = (await _texts(vscode, editId=undo["editId"]))["files"]
    assert (u["before"], u["after"]) == (f["after"], f["before"])
