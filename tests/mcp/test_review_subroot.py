"""Review attack: `agent-edit mcp --root` below the editor's workspace folder. The tools take
paths relative to the root, but the editor's server answered with paths relative to its own
folder (`sub/a.py`): a model reusing a path from a result reached `sub/sub/a.py` (a write
created that file). Results now name paths relative to the root again."""

from __future__ import annotations

import pytest

from tests.editor_client import Editor
from tests.mcp.mcp_helpers import call, mcp_session


@pytest.mark.asyncio
async def test_result_paths_are_relative_to_the_root(vscode: Editor):
    vscode.write_file("sub/a.py", "sub = 1\n")
    vscode.write_file("top.py", "top = 1\n")
    await vscode.command("agentEdit.history", {})
    async with mcp_session(vscode.root / "sub") as s:
        got, text = await call(s, "read", {"path": "a.py"})
        assert got["via"] == "editor" and got["path"] == "a.py", got
        got, text = await call(
            s, "replace", {"path": got["path"], "oldText": "sub = 1", "newText": "sub = 2"}
        )
        assert got["ok"] and [f["path"] for f in got["files"]] == ["a.py"], got
        assert "--- a/a.py\n+++ b/a.py\n" in got["diff"], got["diff"]
        # The model writes the file the result named, by that name: the same file.
        got, _ = await call(s, "read", {"path": got["files"][0]["path"]})
        assert got["ok"] and got["text"] == "sub = 2\n", got
        got, _ = await call(s, "history", {})
        assert got["entries"][-1]["files"][0]["path"] == "a.py", got
        # Above the root: outside its workspace, through the editor as on disk
        # (test_subroot_boundary.py).
        got, _ = await call(s, "read", {"path": "../top.py"})
        assert got["code"] == "OUTSIDE_WORKSPACE", got
    assert not (vscode.root / "sub" / "sub").exists()
    assert (vscode.root / "sub" / "a.py").read_text() == "sub = 2\n"
