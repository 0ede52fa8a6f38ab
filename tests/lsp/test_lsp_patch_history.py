"""applyPatch, history, undo and partial failures through the real server and an editor client."""

from __future__ import annotations

import shutil

import pytest
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, start_session
from tests.engine.test_conformance import NAMES, SAFER, SCENARIOS, tree

# The 5-file patch (create, open-buffer edit, move with edit, delete, unopened edit) and its
# seed are shared with the fault-injection tests.
from tests.lsp.test_lsp_faults import OLD, PATCH, seed  # noqa: E402


@pytest.mark.asyncio
async def test_multi_file_patch_is_one_workspace_edit(editor: Editor):
    seed(editor, open_all=False)
    result = await editor.command("agentEdit.applyPatch", {"patch": PATCH})
    assert result["ok"], result
    assert [(f["path"], f["change"]) for f in result["files"]] == [
        ("src/new.py", "add"),
        ("src/app.py", "update"),
        ("old/name.txt", "move"),
        ("gone.txt", "delete"),
        ("lib.py", "update"),
    ]
    # Only the open buffer goes to the editor (versioned); the add, move, delete and the edit
    # of the file not open are done on disk by the server, in every editor.
    (req,) = editor.apply_requests
    (tde,) = req.edit.document_changes
    assert isinstance(tde, t.TextDocumentEdit) and tde.text_document.version is not None
    assert tde.text_document.uri == editor.uri("src/app.py")
    assert editor.docs.keys() == {editor.uri("src/app.py")}  # no tab opened for the others
    view = editor.view()
    assert view["src/app.py"] == b"def main():\n    return 2\n"
    assert view["src/new.py"] == b'print("new")\n'
    assert view["new/name.txt"] == b"keep\nadded\n"
    assert "old/name.txt" not in view and "gone.txt" not in view
    assert "rename from old/name.txt\nrename to new/name.txt" in result["diff"]


@pytest.mark.asyncio
async def test_patch_failing_in_second_file_changes_nothing(vscode: Editor):
    seed(vscode)
    bad = PATCH.replace("-drop", "-not there")
    result = await vscode.command("agentEdit.applyPatch", {"patch": bad})
    assert result["code"] == "NO_MATCH" and result["details"]["path"] == "old/name.txt"
    assert vscode.apply_requests == []
    assert vscode.view() == OLD


@pytest.mark.asyncio
async def test_history_undo_and_notifications(vscode: Editor):
    vscode.write_file("h.txt", "one\ntwo\nthree\n")
    vscode.open("h.txt")
    await vscode.command("agentEdit.read", {"path": "h.txt"})
    first = await vscode.command(
        "agentEdit.replace", {"path": "h.txt", "oldText": "two", "newText": "2"}
    )
    refused = await vscode.command(
        "agentEdit.replace", {"path": "h.txt", "oldText": "zzz", "newText": "y"}
    )
    assert refused["code"] == "NO_MATCH" and refused["details"]["editId"] == first["editId"] + 1
    # The user types elsewhere; that is not the agent's doing.
    vscode.type("h.txt", 0, 0, "# user\n")
    hist = await vscode.command("agentEdit.history", {"format": "json"})
    outcomes = [(e["id"], e["action"], e["outcome"]) for e in hist["entries"]]
    assert outcomes == [
        (first["editId"], "replace", "applied"),
        (first["editId"] + 1, "replace", "NO_MATCH"),
    ]
    (net,) = hist["net"]
    assert "-two\n+2\n" in net["diff"] and "# user" not in net["diff"]
    diff = await vscode.command("agentEdit.history", {"format": "diff", "editId": first["editId"]})
    assert "-two\n+2" in diff["diff"]
    assert len(vscode.history_changes) >= 2 and vscode.lens_refreshes >= 1
    lenses = await vscode.client.text_document_code_lens_async(
        t.CodeLensParams(text_document=t.TextDocumentIdentifier(uri=vscode.uri("h.txt")))
    )
    assert {lens.command.command for lens in lenses} == {"agentEdit.undo", "agentEdit.history"}
    assert all(lens.range.start.line == 2 for lens in lenses)  # "2" sits below the user's line
    undo = await vscode.command("agentEdit.undo", {"editId": first["editId"]})
    assert undo["ok"], undo
    assert vscode.text("h.txt") == "# user\none\ntwo\nthree\n"
    again = await vscode.command("agentEdit.undo", {"editId": first["editId"]})
    assert again["ok"] is False


@pytest.mark.asyncio
async def test_undo_refused_when_the_lines_changed(vscode: Editor):
    vscode.write_file("c.txt", "alpha\nbeta\n")
    vscode.open("c.txt")
    r = await vscode.command(
        "agentEdit.replace", {"path": "c.txt", "oldText": "beta", "newText": "BETA"}
    )
    assert r["ok"], r
    vscode.type("c.txt", 1, 4, "!")  # the user edits the agent's line
    undo = await vscode.command("agentEdit.undo", {"editId": r["editId"]})
    assert undo["code"] == "CONFLICT"
    assert undo["details"]["lines"][0]["current"] == "BETA!"
    assert vscode.text("c.txt") == "alpha\nBETA!\n"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "skip,code",
    [
        (0, "PARTIAL_ROLLED_BACK"),  # the first buffer's edit is skipped, the rest landed
        (2, "PARTIAL_ROLLED_BACK"),  # the rename is skipped: its edit then fails mid-way
        (5, "PARTIAL_ROLLED_BACK"),  # the delete is skipped, yet the editor says applied
    ],
)
async def test_half_applied_patch_is_rolled_back(client: LanguageClient, tmp_path, skip, code):
    """The editor applies only part of the edit: what landed is undone again, and verified."""
    ed = await start_session(client, "visual-studio-code", tmp_path)
    seed(ed)
    ed.skip_changes = {skip}
    before = ed.view()
    result = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert result["ok"] is False
    assert result["code"] == code, result
    assert result["committed"] == []
    landed = [f for f in result["details"]["files"] if f["state"] == "applied"]
    assert bool(landed) == (code == "PARTIAL_ROLLED_BACK")
    ed.skip_changes = set()
    assert {k: v for k, v in ed.view().items() if v} == before
    hist = await ed.command("agentEdit.history", {"format": "json"})
    assert hist["entries"][-1]["outcome"] == code


@pytest.mark.asyncio
@pytest.mark.parametrize("name", [n for n in NAMES if n not in SAFER])
async def test_codex_scenarios_through_the_editor(client: LanguageClient, tmp_path, name):
    src = SCENARIOS / name
    if (src / "input").is_dir():
        shutil.copytree(src / "input", tmp_path, dirs_exist_ok=True)
    ed = await start_session(client, "visual-studio-code", tmp_path)
    before = ed.view()
    result = await ed.command("agentEdit.applyPatch", {"patch": (src / "patch.txt").read_text()})
    expected = tree(src / "expected")
    if expected == tree(src / "input") or not expected:
        assert result["ok"] is False, result  # a rejecting scenario: nothing changes
        assert ed.view() == before
    else:
        assert result["ok"], result
        assert {k: v for k, v in ed.view().items()} == expected


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["visual-studio-code", "emacs"])
async def test_delete_of_a_buffer_changed_since_is_refused_by_version(client, tmp_path, kind):
    """A delete has no version of its own: an empty versioned edit guards it. (Neovim's built-in
    handler checks only the first edit and skips it silently; the agent-edit Neovim plugin's
    handler refuses it instead.)"""
    editor = await start_session(client, kind, tmp_path)
    editor.write_file("doomed.txt", "x\n")
    editor.open("doomed.txt")
    editor.type("doomed.txt", 0, 0, "y")  # versions move past didOpen's (Neovim's 0)
    patch = "*** Begin Patch\n*** Delete File: doomed.txt\n*** End Patch\n"
    # The user types after the plan was sent; the editor must see a stale version.
    editor.docs[editor.uri("doomed.txt")].version += 1
    result = await editor.command("agentEdit.applyPatch", {"patch": patch})
    assert result["ok"] is False
    assert editor.text("doomed.txt") == "yx\n"
    if kind == "emacs":
        # eglot cannot delete files: refused before anything is sent.
        assert result["code"] == "UNSUPPORTED" and editor.apply_requests == []
        return
    (req,) = editor.apply_requests
    guard, delete = req.edit.document_changes
    assert isinstance(guard, t.TextDocumentEdit) and not guard.edits
    assert isinstance(delete, t.DeleteFile)
