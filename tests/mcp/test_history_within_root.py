"""`agent-edit mcp --root sub` through an editor whose workspace folder holds `sub`: the history
the editor's server answers covers its whole workspace. A read of `../top.py` is refused
OUTSIDE_WORKSPACE (mcp/boundary.py), yet `history {texts: true}` gave that file's whole text
before and after an edit, and the entries and net diffs showed its lines (and, their headers not
rebased, under names that read as files inside the root). The router now leaves out of a history
answer everything that concerns a file outside the root (router.Router._within_root)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lsp_server.mcp.router import Router
from tests.editor_client import Editor

SECRET = "top_secret = 1"


def _shows_nothing_outside(got: dict[str, Any]) -> None:
    assert got["ok"] and got["via"] == "editor", got
    text = json.dumps(got)
    assert "top_secret" not in text and "top.py" not in text, got


@pytest.mark.asyncio
async def test_history_through_the_editor_shows_nothing_outside_the_root(vscode: Editor) -> None:
    vscode.write_file("top.py", f"{SECRET}\nx = 1\n")
    vscode.write_file("sub/a.py", "sub = 1\n")
    vscode.open("top.py")
    vscode.open("sub/a.py")
    alone = await vscode.command(
        "agentEdit.replace", {"path": "top.py", "oldText": "x = 1", "newText": "x = 2"}
    )
    both = await vscode.command(
        "agentEdit.applyPatch",
        {
            "patch": "*** Begin Patch\n*** Update File: top.py\n@@\n-x = 2\n+x = 3\n"
            "*** Update File: sub/a.py\n@@\n-sub = 1\n+sub = 2\n*** End Patch\n"
        },
    )
    assert alone["ok"] and both["ok"], (alone, both)
    router = Router(str(vscode.root / "sub"))
    await router.call("read", {"path": "a.py"})
    mine = await router.call(
        "replace", {"path": "a.py", "oldText": "sub = 2", "newText": "sub = 3"}
    )
    assert mine["ok"] and mine["via"] == "editor", mine

    got = await router.call("history", {})
    _shows_nothing_outside(got)
    assert [e["id"] for e in got["entries"]] == [mine["editId"]], got
    assert [n["path"] for n in got["net"]] == ["a.py"], got
    assert got["note"], got

    for edit_id in (alone["editId"], both["editId"]):
        for args in ({"texts": True}, {"format": "diff"}, {}):
            got = await router.call("history", {"editId": edit_id, **args})
            _shows_nothing_outside(got)
    got = await router.call("history", {"format": "diff"})
    _shows_nothing_outside(got)
    assert "diff --git a/a.py b/a.py" in got["diff"], got
    got = await router.call("history", {"texts": True})
    _shows_nothing_outside(got)
    assert [f["path"] for f in got["files"]] == ["a.py"], got

    # The editor's own view is whole.
    whole = await vscode.command("agentEdit.history", {})
    assert len(whole["entries"]) == 3 and SECRET in json.dumps(whole)
