"""`agent-edit mcp --root` below the editor's workspace folder, with names the router took for
absolute: it rebases relative paths onto the editor's folder, and left every path starting with
`~` or `file:` as it was. The path policy expands only `~` and `~/...`, so `~draft.py` (a file in
the root) reached the editor's server unrebased, resolved against the editor's folder, and was
refused OUTSIDE_WORKSPACE naming a file the agent never meant, while the disk front reads and
edits it. And `ab:d.py` (a URI to the policy, refused on disk) was rebased to `sub/ab:d.py`, a
plain name the editor took. Both fronts must answer alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire
from lsp_server.mcp.router import Router
from tests.editor_client import Editor


async def on_disk(root: Path, action: str, args: dict[str, Any]) -> dict[str, Any]:
    async with headless.open(str(root)) as ctx:
        return wire(await actions.run(ctx, action, args))


@pytest.mark.asyncio
async def test_a_tilde_name_in_the_root_is_that_file_through_the_editor(vscode: Editor) -> None:
    vscode.write_file("sub/~draft.py", "d = 1\n")
    top = vscode.write_file("~draft.py", "top = 1\n")
    await vscode.command("agentEdit.history", {})
    sub = vscode.root / "sub"
    router = Router(str(sub))
    disk = await on_disk(sub, "read", {"path": "~draft.py"})
    assert disk["ok"] is True and disk["text"] == "d = 1\n", disk
    got = await router.call("read", {"path": "~draft.py"})
    assert got["ok"] is True and got["via"] == "editor", got
    assert got["text"] == "d = 1\n" and got["path"] == "~draft.py", got
    got = await router.call(
        "replace", {"path": "~draft.py", "oldText": "d = 1", "newText": "d = 2"}
    )
    assert got["ok"] is True and got["via"] == "editor", got
    assert [f["path"] for f in got["files"]] == ["~draft.py"], got
    assert (sub / "~draft.py").read_text() == "d = 2\n"
    assert top.read_text() == "top = 1\n"
