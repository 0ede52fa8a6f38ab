"""`agent-edit mcp --root sub` through an editor whose workspace folder holds `sub`: `undo` names
no path, so the router's boundary check (mcp/boundary.py, on the paths a call names) let it
through, and the editor's server reverted an edit of `../top.py`, a file outside the root, which
the disk front (its own history, its own folder) never reaches. The router now tells the editor's
server the root (`within`), and its context refuses every path outside it, the paths an undo
takes from the history included, OUTSIDE_WORKSPACE, before anything is sent."""

from __future__ import annotations

import pytest

from lsp_server.mcp.router import Router
from tests.editor_client import Editor


@pytest.mark.asyncio
@pytest.mark.parametrize("dry_run", [False, True])
async def test_undo_of_an_edit_outside_the_root_is_refused(vscode: Editor, dry_run: bool) -> None:
    vscode.write_file("sub/a.py", "sub = 1\n")
    top = vscode.write_file("top.py", "top = 1\n")
    vscode.open("top.py")
    done = await vscode.command(
        "agentEdit.replace", {"path": "top.py", "oldText": "top = 1", "newText": "top = 2"}
    )
    assert done["ok"], done
    sent = len(vscode.apply_requests)

    got = await Router(str(vscode.root / "sub")).call(
        "undo", {"editId": done["editId"], "dryRun": dry_run}
    )
    assert got["ok"] is False and got["code"] == "OUTSIDE_WORKSPACE", got
    assert got["details"]["rule"] == "outside-workspace", got
    assert "top.py" in got["message"], got
    assert len(vscode.apply_requests) == sent  # nothing was sent to the editor
    assert vscode.text("top.py") == "top = 2\n" and top.read_text() == "top = 1\n"


@pytest.mark.asyncio
async def test_undo_of_an_edit_inside_the_root_still_goes_through_the_editor(
    vscode: Editor,
) -> None:
    vscode.write_file("sub/a.py", "sub = 1\n")
    vscode.open("sub/a.py")
    await vscode.command("agentEdit.history", {})
    router = Router(str(vscode.root / "sub"))
    await router.call("read", {"path": "a.py"})
    done = await router.call(
        "replace", {"path": "a.py", "oldText": "sub = 1", "newText": "sub = 2"}
    )
    assert done["ok"] and done["via"] == "editor", done
    got = await router.call("undo", {"editId": done["editId"]})
    assert got["ok"] and got["via"] == "editor", got
    assert [f["path"] for f in got["files"]] == ["a.py"], got
    assert vscode.text("sub/a.py") == "sub = 1\n"
