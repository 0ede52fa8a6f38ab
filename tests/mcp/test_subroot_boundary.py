"""`agent-edit mcp --root` below the editor's workspace folder: the root is the workspace for
every path the tools take, through the editor as on disk (product.md 5, workspace-only). Before,
`../top.py` was read and edited through the editor (the editor's folder holds it) but refused
OUTSIDE_WORKSPACE on disk, so the boundary depended on whether an editor ran. Both fronts now
answer alike: such a call is answered by the disk front, which refuses it before anything is
written (lsp_server/mcp/boundary.py, router.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire
from lsp_server.mcp.router import Router
from tests.editor_client import Editor

SHA = hashlib.sha256(b"top = 1\n").hexdigest()
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "read": ("read", {"path": "../top.py"}),
    "replace": ("replace", {"path": "../top.py", "oldText": "top = 1", "newText": "top = 2"}),
    "write": ("write", {"path": "../top.py", "text": "top = 2\n", "expect": {"sha256": SHA}}),
    "absolute": ("read", {"path": "TOP"}),
    "patch": (
        "applyPatch",
        {
            "patch": "*** Begin Patch\n*** Update File: ../top.py\n@@\n-top = 1\n+top = 2\n"
            "*** End Patch\n"
        },
    ),
    "move to": (
        "applyPatch",
        {
            "patch": "*** Begin Patch\n*** Update File: a.py\n*** Move to: ../moved.py\n@@\n"
            "-sub = 1\n+sub = 2\n*** End Patch\n"
        },
    ),
}


def _args(args: dict[str, Any], top: Path) -> dict[str, Any]:
    return {k: (str(top) if v == "TOP" else v) for k, v in args.items()}


async def on_disk(root: Path, action: str, args: dict[str, Any]) -> dict[str, Any]:
    async with headless.open(str(root)) as ctx:
        return wire(await actions.run(ctx, action, args))


@pytest.mark.asyncio
@pytest.mark.parametrize("call", list(CALLS), ids=list(CALLS))
async def test_a_path_above_the_root_is_refused_through_the_editor_as_on_disk(
    vscode: Editor, call: str
) -> None:
    vscode.write_file("sub/a.py", "sub = 1\n")
    top = vscode.write_file("top.py", "top = 1\n")
    vscode.open("top.py")
    await vscode.command("agentEdit.history", {})
    action, args = CALLS[call]
    args = _args(args, top)
    sub = vscode.root / "sub"
    got = await Router(str(sub)).call(action, args)
    disk = await on_disk(sub, action, args)
    assert disk["code"] == "OUTSIDE_WORKSPACE", disk
    assert got["ok"] is False and got["code"] == disk["code"], got
    assert got["message"] == disk["message"] and got["via"] == "disk", (got, disk)
    assert vscode.apply_requests == []
    assert top.read_text() == "top = 1\n" and vscode.text("top.py") == "top = 1\n"
    assert (sub / "a.py").read_text() == "sub = 1\n"
    assert not (vscode.root / "moved.py").exists()


@pytest.mark.asyncio
async def test_a_path_inside_the_root_still_goes_through_the_editor(vscode: Editor) -> None:
    vscode.write_file("sub/a.py", "sub = 1\n")
    vscode.open("sub/a.py")
    await vscode.command("agentEdit.history", {})
    got = await Router(str(vscode.root / "sub")).call("read", {"path": "../sub/a.py"})
    assert got["ok"] and got["via"] == "editor" and got["source"] == "buffer", got
