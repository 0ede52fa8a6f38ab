"""`agent-edit mcp --root sub` through an editor whose workspace folder holds `sub`: a history
answer leaves out entries about files outside the root (router.Router._within_root), judged by
the files each entry names. A refused request names none (`files: []`), but its entry echoes the
request: the path outside the root and the text sent with it (an `oldText` copied from that
file). Those were shown; they are left out too, while refusals inside the root still show."""

from __future__ import annotations

import pytest

from lsp_server.mcp.router import Router
from tests.editor_client import Editor
from tests.mcp.test_history_within_root import SECRET, _shows_nothing_outside


@pytest.mark.asyncio
async def test_refused_requests_about_files_outside_the_root_are_not_shown(
    vscode: Editor,
) -> None:
    vscode.write_file("top.py", f"{SECRET}\n")
    vscode.write_file("sub/a.py", "sub = 1\n")
    vscode.open("top.py")
    uri = (vscode.root / "sub" / "a.py").as_uri()  # inside the root, named by its URI
    refused = [
        ("agentEdit.replace", {"path": "top.py", "oldText": SECRET, "newText": SECRET}),
        (
            "agentEdit.applyPatch",
            {
                "patch": f"*** Begin Patch\n*** Update File: top.py\n@@\n-{SECRET}\n+{SECRET}\n"
                "*** End Patch\n"
            },
        ),
        ("agentEdit.replace", {"path": "sub/a.py", "oldText": "sub = 1", "newText": "sub = 1"}),
        ("agentEdit.replace", {"path": uri, "oldText": "sub = 1", "newText": "sub = 1"}),
    ]
    for command, args in refused:
        got = await vscode.command(command, args)
        assert got["ok"] is False and got["code"] == "INVALID_ARGUMENT", got
    got = await Router(str(vscode.root / "sub")).call("history", {})
    _shows_nothing_outside(got)
    # The refusals inside the root are still there, with the request as it was recorded.
    assert [e["args"]["path"] for e in got["entries"]] == ["sub/a.py", uri], got
    assert "2 item(s)" in got["note"], got
